-- Single sign-on: whether the user was created by SSO, so its role and account follow the provider's mapping
-- at each sign-in. A local user that SSO linked keeps the role and account it had (issue 25, item 3). Users
-- already linked are taken as created by SSO when they have no password (a local user always had one or an
-- invitation; SSO never set one): a linked local user with a password is never re-roled again.
ALTER TABLE "users" ADD COLUMN "oidc_managed" BOOLEAN NOT NULL DEFAULT false;
UPDATE "users" SET "oidc_managed" = true WHERE "oidc_subject" IS NOT NULL AND "password_hash" IS NULL;
