import { defineConfig } from "prisma/config";

// The URL is only needed by Prisma CLI commands that talk to a database (migrate deploy, studio);
// modelgate applies its migrations itself at start-up.
export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  datasource: { url: process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/test" },
});
