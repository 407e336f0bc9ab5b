-- Sign-in and step-up throttling by key (e-mail and client address; user), replacing the per-user lock.
CREATE TABLE "auth_throttles" (
    "key" TEXT NOT NULL,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "blocked_until" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "auth_throttles_pkey" PRIMARY KEY ("key")
);

-- The last TOTP time step accepted for the user: a code is good once.
ALTER TABLE "users" ADD COLUMN "totp_last_step" BIGINT;

-- Invitations can be revoked before they are accepted.
ALTER TABLE "invitations" ADD COLUMN "revoked_at" TIMESTAMPTZ(3);
