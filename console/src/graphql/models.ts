import { graphql } from "./generated";

export const CustomerModelFields = graphql(`
  fragment CustomerModelFields on CustomerModel {
    id
    displayName
    reasoning
    inputPrice
    outputPrice
    cachedInputPrice
    contracted
  }
`);

export const ModelsQuery = graphql(`
  query Models {
    models {
      ...CustomerModelFields
    }
  }
`);
