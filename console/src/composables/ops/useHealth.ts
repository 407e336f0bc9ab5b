import { useQuery } from "@urql/vue";
import { computed, onBeforeUnmount, onMounted, type Ref } from "vue";
import { HealthQuery } from "../../graphql/operator";

/** How often the health page reads again while it is open. */
const LIVE_MS = 15_000;

/**
 * Upstream health over the last `minutes` (breakers, error rate, latency, key pools) and usage across every
 * customer over the last `days`; read again every 15 seconds while the page is mounted.
 */
export function useHealth(minutes: Ref<number>, days: Ref<number>) {
  const range = computed(() => {
    const to = new Date();
    return { from: new Date(to.getTime() - days.value * 86_400_000).toISOString(), to: to.toISOString() };
  });
  const query = useQuery({
    query: HealthQuery,
    variables: () => ({ minutes: minutes.value, ...range.value }),
    requestPolicy: "cache-and-network",
  });
  const refresh = () => query.executeQuery({ requestPolicy: "network-only" });
  let timer: ReturnType<typeof setInterval> | undefined;
  onMounted(() => (timer = setInterval(refresh, LIVE_MS)));
  onBeforeUnmount(() => clearInterval(timer));
  return {
    loaded: computed(() => query.data.value !== undefined),
    health: computed(() => query.data.value?.upstreamHealth),
    usage: computed(() => query.data.value?.operatorUsage),
    fetching: query.fetching,
    error: query.error,
    refresh,
  };
}
