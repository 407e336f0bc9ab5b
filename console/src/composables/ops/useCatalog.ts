import { useMutation, useQuery } from "@urql/vue";
import { computed } from "vue";
import {
  CatalogQuery,
  DeleteModelMutation,
  DeleteRouteMutation,
  DeleteUpstreamMutation,
  UpsertModelMutation,
  UpsertRouteMutation,
  UpsertUpstreamMutation,
} from "../../graphql/operator";
import type { ModelInput, RouteInput, UpstreamInput } from "../../graphql/generated/graphql";
import { refreshing } from "../refreshing";

/**
 * The catalogue for operators: models with their routes, upstreams, and which settings and secrets each kind of
 * upstream (provider) takes; with saving and deleting each. The catalogue is read again after every change.
 */
export function useCatalog() {
  const query = useQuery({ query: CatalogQuery, requestPolicy: "cache-and-network" });
  const refresh = () => query.executeQuery({ requestPolicy: "network-only" });
  const upsertModelOp = useMutation(UpsertModelMutation);
  const deleteModelOp = useMutation(DeleteModelMutation);
  const upsertUpstreamOp = useMutation(UpsertUpstreamMutation);
  const deleteUpstreamOp = useMutation(DeleteUpstreamMutation);
  const upsertRouteOp = useMutation(UpsertRouteMutation);
  const deleteRouteOp = useMutation(DeleteRouteMutation);
  const models = computed(() => query.data.value?.catalogModels ?? []);

  return {
    loaded: computed(() => query.data.value !== undefined),
    models,
    upstreams: computed(() => query.data.value?.upstreams ?? []),
    providers: computed(() => query.data.value?.upstreamProviders ?? []),
    routes: computed(() => models.value.flatMap((m) => m.routes)),
    fetching: query.fetching,
    error: query.error,
    refresh,
    saveModel: refreshing((input: ModelInput) => upsertModelOp.executeMutation({ input }), refresh),
    deleteModel: refreshing((id: string) => deleteModelOp.executeMutation({ id }), refresh),
    saveUpstream: refreshing((input: UpstreamInput) => upsertUpstreamOp.executeMutation({ input }), refresh),
    deleteUpstream: refreshing((id: string) => deleteUpstreamOp.executeMutation({ id }), refresh),
    saveRoute: refreshing((input: RouteInput) => upsertRouteOp.executeMutation({ input }), refresh),
    deleteRoute: refreshing((id: string) => deleteRouteOp.executeMutation({ id }), refresh),
  };
}
