import { gql } from "@urql/vue";
import type { LedgerEntry, Page, Wallet } from "./types";

export const WalletQuery = gql<{ wallet: Wallet }, Record<string, never>>`
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
`;

export const LedgerQuery = gql<{ ledger: Page<LedgerEntry> }, { first: number; after: string | null }>`
  query Ledger($first: Int, $after: String) {
    ledger(first: $first, after: $after) {
      endCursor
      hasNextPage
      nodes {
        id
        createdAt
        kind
        amount
        balanceAfter
        note
        requestId
        apiKeyId
      }
    }
  }
`;
