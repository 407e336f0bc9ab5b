import { graphql } from "./generated";

export const WalletQuery = graphql(`
  query Wallet {
    wallet {
      balance
      currency
      spentToday
      spentThisMonth
      keys {
        spent
        apiKey {
          id
          name
          prefix
          state
        }
      }
    }
  }
`);

/** One ledger line: the customer's wallet page and the operator's customer page show the same columns. */
export const LedgerEntryFields = graphql(`
  fragment LedgerEntryFields on LedgerEntry {
    id
    createdAt
    kind
    amount
    balanceAfter
    note
    requestId
    apiKeyId
    batchId
    calls
  }
`);

export const LedgerQuery = graphql(`
  query Ledger($first: Int, $after: String) {
    ledger(first: $first, after: $after) {
      endCursor
      hasNextPage
      nodes {
        ...LedgerEntryFields
      }
    }
  }
`);
