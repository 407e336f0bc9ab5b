export * from "./snapshot.ts";
export * from "./usage.ts";
