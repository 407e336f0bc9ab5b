-- Single sign-on: the OpenID Connect identity (issuer#subject) a user is linked to.
ALTER TABLE "users" ADD COLUMN "oidc_subject" TEXT;
CREATE UNIQUE INDEX "users_oidc_subject_key" ON "users"("oidc_subject");
