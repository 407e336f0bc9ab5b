export * from "./protocols.ts";
export * from "./snapshot.ts";
export * from "./usage.ts";
export * from "./redis-names.ts";
export * from "./policy-feed.ts";
