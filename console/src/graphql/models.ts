import { gql } from "@urql/vue";
import type { CustomerModel } from "./types";

export const ModelsQuery = gql<{ models: CustomerModel[] }, Record<string, never>>`
  query Models {
    models {
      id
      displayName
      reasoning
      inputPrice
      outputPrice
      cachedInputPrice
      contracted
    }
  }
`;
