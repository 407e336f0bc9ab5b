// The services' errors are declared below every folder that throws them (auth and audit too, which the services
// build on): control-plane/src/errors/app-error.ts. Services and the doors above them import them from here.
export * from "../errors/app-error.ts";
