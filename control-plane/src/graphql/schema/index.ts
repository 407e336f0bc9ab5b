import { lexicographicSortSchema, printSchema } from "graphql";
import { builder } from "../builder.ts";
import "./enums.ts";
import "./user.ts";
import "./security.ts";
import "./account.ts";
import "./membership.ts";
import "./wallet-operations.ts";
import "./invitation.ts";
import "./api-key.ts";
import "./budget.ts";
import "./alerts.ts";
import "./wallet.ts";
import "./usage.ts";
import "./model.ts";
import "./export.ts";

export const schema = builder.toSchema();
export const printedSchema = () => printSchema(lexicographicSortSchema(schema));
