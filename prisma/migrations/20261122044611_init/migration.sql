-- CreateEnum
CREATE TYPE "account_status" AS ENUM ('active', 'inactive');

-- CreateEnum
CREATE TYPE "user_status" AS ENUM ('pending', 'active', 'disabled');

-- CreateEnum
CREATE TYPE "event_status" AS ENUM ('draft', 'published', 'on_sale', 'sold_out', 'completed', 'cancelled');

-- CreateEnum
CREATE TYPE "occurrence_status" AS ENUM ('scheduled', 'cancelled');

-- CreateEnum
CREATE TYPE "channel_type" AS ENUM ('web', 'box_office', 'partner', 'embedded', 'mobile');

-- CreateEnum
CREATE TYPE "channel_key_kind" AS ENUM ('publishable', 'secret');

-- CreateEnum
CREATE TYPE "cart_status" AS ENUM ('open', 'checked_out', 'abandoned');

-- CreateEnum
CREATE TYPE "order_status" AS ENUM ('pending', 'confirmed', 'cancelled', 'refunded');

-- CreateEnum
CREATE TYPE "payment_status" AS ENUM ('succeeded', 'declined');

-- CreateEnum
CREATE TYPE "pass_status" AS ENUM ('issued', 'redeemed', 'void');

-- CreateEnum
CREATE TYPE "delivery_status" AS ENUM ('pending', 'succeeded', 'failed');

-- CreateEnum
CREATE TYPE "attempt_trigger" AS ENUM ('scheduled', 'manual');

-- CreateTable
CREATE TABLE "organisations" (
    "id" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "primaryColor" TEXT,
    "secondaryColor" TEXT,
    "logoUrl" TEXT,
    "metadata" JSONB,
    "apiVersion" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "organisations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "accounts" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "status" "account_status" NOT NULL DEFAULT 'active',
    "isDeleted" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "accounts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "people" (
    "id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "firstName" TEXT,
    "lastName" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "people_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "password_credentials" (
    "personId" TEXT NOT NULL,
    "passwordHash" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "password_credentials_pkey" PRIMARY KEY ("personId")
);

-- CreateTable
CREATE TABLE "users" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "personId" TEXT,
    "email" TEXT NOT NULL,
    "firstName" TEXT,
    "lastName" TEXT,
    "status" "user_status" NOT NULL DEFAULT 'active',
    "identityProviderId" TEXT,
    "externalUserId" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "users_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "refresh_tokens" (
    "id" TEXT NOT NULL,
    "personId" TEXT NOT NULL,
    "organisationId" TEXT,
    "familyId" TEXT NOT NULL,
    "tokenHash" TEXT NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "usedAt" TIMESTAMPTZ(3),
    "revokedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "refresh_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "identity_providers" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT,
    "providerType" TEXT NOT NULL,
    "isDefault" BOOLEAN NOT NULL DEFAULT false,
    "isEnabled" BOOLEAN NOT NULL DEFAULT true,
    "supportsPkce" BOOLEAN NOT NULL DEFAULT true,
    "issuer" TEXT NOT NULL,
    "jwksUri" TEXT NOT NULL,
    "authorizationEndpoint" TEXT,
    "tokenEndpoint" TEXT,
    "tokenEndpointInternal" TEXT,
    "userinfoEndpoint" TEXT,
    "userinfoEndpointInternal" TEXT,
    "jwksUriInternal" TEXT,
    "clientId" TEXT,
    "scopes" TEXT[],
    "allowedClientIds" TEXT[],
    "emailDomain" TEXT,
    "cacheTtl" INTEGER NOT NULL DEFAULT 600,
    "configuration" JSONB,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "identity_providers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "invitations" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "code" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "roleIds" TEXT[],
    "accountId" TEXT,
    "invitedById" TEXT,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "redeemedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "invitations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "roles" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "permissions" TEXT[],
    "isSystemRole" BOOLEAN NOT NULL DEFAULT false,
    "systemKey" TEXT,
    "isDeleted" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "roles_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "role_assignments" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "roleId" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "role_assignments_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT,
    "name" TEXT NOT NULL,
    "keyHash" TEXT NOT NULL,
    "keyPrefix" TEXT NOT NULL,
    "scopes" TEXT[],
    "createdById" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastUsedAt" TIMESTAMPTZ(3),
    "expiresAt" TIMESTAMPTZ(3),
    "revokedAt" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "embed_sessions" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "apiKeyId" TEXT NOT NULL,
    "scopes" TEXT[],
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "revokedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "embed_sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "venues" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "addressLine1" TEXT,
    "addressLine2" TEXT,
    "city" TEXT,
    "region" TEXT,
    "postalCode" TEXT,
    "country" TEXT,
    "timezone" TEXT,
    "capacity" INTEGER,
    "isDeleted" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "venues_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "events" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "status" "event_status" NOT NULL DEFAULT 'draft',
    "venueId" TEXT,
    "timezone" TEXT NOT NULL,
    "onSaleDate" TIMESTAMPTZ(3),
    "offSaleDate" TIMESTAMPTZ(3),
    "tags" TEXT[],
    "isDeleted" BOOLEAN NOT NULL DEFAULT false,
    "createdBy" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "event_occurrences" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "eventId" TEXT NOT NULL,
    "startsAt" TIMESTAMPTZ(3) NOT NULL,
    "endsAt" TIMESTAMPTZ(3),
    "timezone" TEXT NOT NULL,
    "status" "occurrence_status" NOT NULL DEFAULT 'scheduled',
    "capacity" INTEGER,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "event_occurrences_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ticket_types" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "eventId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "priceAmount" INTEGER NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "capacity" INTEGER,
    "maxPerOrder" INTEGER,
    "salesStartAt" TIMESTAMPTZ(3),
    "salesEndAt" TIMESTAMPTZ(3),
    "isDeleted" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ticket_types_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "products" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "eventId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "priceAmount" INTEGER NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "isDeleted" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "products_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "inventories" (
    "organisationId" TEXT NOT NULL,
    "ticketTypeId" TEXT NOT NULL,
    "occurrenceId" TEXT NOT NULL,
    "capacity" INTEGER,
    "held" INTEGER NOT NULL DEFAULT 0,
    "sold" INTEGER NOT NULL DEFAULT 0,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "inventories_pkey" PRIMARY KEY ("ticketTypeId","occurrenceId")
);

-- CreateTable
CREATE TABLE "sales_channels" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "channelType" "channel_type" NOT NULL DEFAULT 'web',
    "sellsAllEvents" BOOLEAN NOT NULL DEFAULT true,
    "isActive" BOOLEAN NOT NULL DEFAULT true,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "sales_channels_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sales_channel_events" (
    "organisationId" TEXT NOT NULL,
    "channelId" TEXT NOT NULL,
    "eventId" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sales_channel_events_pkey" PRIMARY KEY ("channelId","eventId")
);

-- CreateTable
CREATE TABLE "channel_keys" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "channelId" TEXT NOT NULL,
    "kind" "channel_key_kind" NOT NULL,
    "keyHash" TEXT NOT NULL,
    "keyPrefix" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastUsedAt" TIMESTAMPTZ(3),
    "revokedAt" TIMESTAMPTZ(3),

    CONSTRAINT "channel_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "customers" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "firstName" TEXT,
    "lastName" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "customers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "customer_login_codes" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "codeHash" TEXT NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "usedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "customer_login_codes_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sales_sessions" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "channelId" TEXT NOT NULL,
    "customerId" TEXT,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "lastSeenAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sales_sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "carts" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "channelId" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "status" "cart_status" NOT NULL DEFAULT 'open',
    "currency" CHAR(3),
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "carts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "cart_items" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "cartId" TEXT NOT NULL,
    "ticketTypeId" TEXT NOT NULL,
    "occurrenceId" TEXT NOT NULL,
    "quantity" INTEGER NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "cart_items_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "orders" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "channelId" TEXT,
    "customerId" TEXT NOT NULL,
    "cartId" TEXT,
    "orderNumber" TEXT NOT NULL,
    "status" "order_status" NOT NULL DEFAULT 'pending',
    "currency" CHAR(3) NOT NULL,
    "subtotalAmount" INTEGER NOT NULL,
    "feeAmount" INTEGER NOT NULL DEFAULT 0,
    "totalAmount" INTEGER NOT NULL,
    "holdExpiresAt" TIMESTAMPTZ(3),
    "confirmedAt" TIMESTAMPTZ(3),
    "cancelledAt" TIMESTAMPTZ(3),
    "refundedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "orders_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "order_line_items" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "orderId" TEXT NOT NULL,
    "ticketTypeId" TEXT NOT NULL,
    "occurrenceId" TEXT NOT NULL,
    "quantity" INTEGER NOT NULL,
    "unitAmount" INTEGER NOT NULL,
    "totalAmount" INTEGER NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "order_line_items_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "payments" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "orderId" TEXT NOT NULL,
    "amount" INTEGER NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "method" TEXT NOT NULL,
    "cardLast4" TEXT,
    "status" "payment_status" NOT NULL,
    "failureReason" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "payments_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "passes" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "orderId" TEXT NOT NULL,
    "lineItemId" TEXT NOT NULL,
    "customerId" TEXT NOT NULL,
    "ticketTypeId" TEXT NOT NULL,
    "occurrenceId" TEXT NOT NULL,
    "code" TEXT NOT NULL,
    "status" "pass_status" NOT NULL DEFAULT 'issued',
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "passes_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "entitlements" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "passId" TEXT NOT NULL,
    "occurrenceId" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "entitlements_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "redemptions" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "passId" TEXT NOT NULL,
    "entitlementId" TEXT NOT NULL,
    "redeemedById" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "redemptions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_endpoints" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "description" TEXT,
    "eventTypes" TEXT[],
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "apiVersion" TEXT NOT NULL,
    "secretCiphertext" TEXT NOT NULL,
    "deletedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "webhook_endpoints_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_events" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "version" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_deliveries" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "accountId" TEXT NOT NULL,
    "eventId" TEXT NOT NULL,
    "endpointId" TEXT NOT NULL,
    "eventType" TEXT NOT NULL,
    "status" "delivery_status" NOT NULL DEFAULT 'pending',
    "attemptCount" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" TIMESTAMPTZ(3),
    "workflowStartedAt" TIMESTAMPTZ(3),
    "completedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_attempts" (
    "id" TEXT NOT NULL,
    "organisationId" TEXT NOT NULL,
    "deliveryId" TEXT NOT NULL,
    "attemptNumber" INTEGER NOT NULL,
    "trigger" "attempt_trigger" NOT NULL DEFAULT 'scheduled',
    "attemptedAt" TIMESTAMPTZ(3) NOT NULL,
    "statusCode" INTEGER,
    "responseBody" TEXT,
    "durationMs" INTEGER NOT NULL,
    "error" TEXT,

    CONSTRAINT "webhook_attempts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "outbox_messages" (
    "id" TEXT NOT NULL,
    "to" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "text" TEXT NOT NULL,
    "meta" JSONB,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "outbox_messages_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "organisations_slug_key" ON "organisations"("slug");

-- CreateIndex
CREATE INDEX "accounts_organisationId_isDeleted_createdAt_idx" ON "accounts"("organisationId", "isDeleted", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "accounts_organisationId_id_key" ON "accounts"("organisationId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "people_email_key" ON "people"("email");

-- CreateIndex
CREATE UNIQUE INDEX "users_organisationId_id_key" ON "users"("organisationId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "users_organisationId_email_key" ON "users"("organisationId", "email");

-- CreateIndex
CREATE UNIQUE INDEX "users_organisationId_personId_key" ON "users"("organisationId", "personId");

-- CreateIndex
CREATE UNIQUE INDEX "users_identityProviderId_externalUserId_key" ON "users"("identityProviderId", "externalUserId");

-- CreateIndex
CREATE UNIQUE INDEX "refresh_tokens_tokenHash_key" ON "refresh_tokens"("tokenHash");

-- CreateIndex
CREATE INDEX "refresh_tokens_familyId_idx" ON "refresh_tokens"("familyId");

-- CreateIndex
CREATE INDEX "identity_providers_organisationId_idx" ON "identity_providers"("organisationId");

-- CreateIndex
CREATE INDEX "identity_providers_issuer_idx" ON "identity_providers"("issuer");

-- CreateIndex
CREATE UNIQUE INDEX "invitations_code_key" ON "invitations"("code");

-- CreateIndex
CREATE INDEX "invitations_organisationId_createdAt_idx" ON "invitations"("organisationId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "roles_organisationId_id_key" ON "roles"("organisationId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "roles_organisationId_systemKey_key" ON "roles"("organisationId", "systemKey");

-- CreateIndex
CREATE INDEX "role_assignments_organisationId_accountId_idx" ON "role_assignments"("organisationId", "accountId");

-- CreateIndex
CREATE INDEX "role_assignments_organisationId_roleId_idx" ON "role_assignments"("organisationId", "roleId");

-- CreateIndex
CREATE UNIQUE INDEX "role_assignments_userId_accountId_roleId_key" ON "role_assignments"("userId", "accountId", "roleId");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_keyHash_key" ON "api_keys"("keyHash");

-- CreateIndex
CREATE INDEX "api_keys_organisationId_createdAt_idx" ON "api_keys"("organisationId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_organisationId_id_key" ON "api_keys"("organisationId", "id");

-- CreateIndex
CREATE INDEX "venues_organisationId_accountId_idx" ON "venues"("organisationId", "accountId");

-- CreateIndex
CREATE UNIQUE INDEX "venues_organisationId_id_key" ON "venues"("organisationId", "id");

-- CreateIndex
CREATE INDEX "events_organisationId_accountId_isDeleted_createdAt_idx" ON "events"("organisationId", "accountId", "isDeleted", "createdAt");

-- CreateIndex
CREATE INDEX "events_organisationId_status_idx" ON "events"("organisationId", "status");

-- CreateIndex
CREATE UNIQUE INDEX "events_organisationId_id_key" ON "events"("organisationId", "id");

-- CreateIndex
CREATE INDEX "event_occurrences_organisationId_eventId_startsAt_idx" ON "event_occurrences"("organisationId", "eventId", "startsAt");

-- CreateIndex
CREATE UNIQUE INDEX "event_occurrences_organisationId_id_key" ON "event_occurrences"("organisationId", "id");

-- CreateIndex
CREATE INDEX "ticket_types_organisationId_eventId_idx" ON "ticket_types"("organisationId", "eventId");

-- CreateIndex
CREATE UNIQUE INDEX "ticket_types_organisationId_id_key" ON "ticket_types"("organisationId", "id");

-- CreateIndex
CREATE INDEX "products_organisationId_eventId_idx" ON "products"("organisationId", "eventId");

-- CreateIndex
CREATE UNIQUE INDEX "sales_channels_organisationId_id_key" ON "sales_channels"("organisationId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "sales_channels_organisationId_slug_key" ON "sales_channels"("organisationId", "slug");

-- CreateIndex
CREATE UNIQUE INDEX "channel_keys_keyHash_key" ON "channel_keys"("keyHash");

-- CreateIndex
CREATE INDEX "channel_keys_organisationId_channelId_idx" ON "channel_keys"("organisationId", "channelId");

-- CreateIndex
CREATE UNIQUE INDEX "customers_organisationId_id_key" ON "customers"("organisationId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "customers_accountId_email_key" ON "customers"("accountId", "email");

-- CreateIndex
CREATE UNIQUE INDEX "customer_login_codes_codeHash_key" ON "customer_login_codes"("codeHash");

-- CreateIndex
CREATE UNIQUE INDEX "sales_sessions_organisationId_id_key" ON "sales_sessions"("organisationId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "carts_organisationId_id_key" ON "carts"("organisationId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "cart_items_cartId_ticketTypeId_occurrenceId_key" ON "cart_items"("cartId", "ticketTypeId", "occurrenceId");

-- CreateIndex
CREATE UNIQUE INDEX "orders_cartId_key" ON "orders"("cartId");

-- CreateIndex
CREATE INDEX "orders_organisationId_accountId_status_createdAt_idx" ON "orders"("organisationId", "accountId", "status", "createdAt");

-- CreateIndex
CREATE INDEX "orders_organisationId_customerId_idx" ON "orders"("organisationId", "customerId");

-- CreateIndex
CREATE UNIQUE INDEX "orders_organisationId_id_key" ON "orders"("organisationId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "orders_organisationId_orderNumber_key" ON "orders"("organisationId", "orderNumber");

-- CreateIndex
CREATE INDEX "order_line_items_organisationId_orderId_idx" ON "order_line_items"("organisationId", "orderId");

-- CreateIndex
CREATE UNIQUE INDEX "order_line_items_organisationId_id_key" ON "order_line_items"("organisationId", "id");

-- CreateIndex
CREATE INDEX "payments_organisationId_orderId_idx" ON "payments"("organisationId", "orderId");

-- CreateIndex
CREATE UNIQUE INDEX "passes_code_key" ON "passes"("code");

-- CreateIndex
CREATE INDEX "passes_organisationId_orderId_idx" ON "passes"("organisationId", "orderId");

-- CreateIndex
CREATE UNIQUE INDEX "passes_organisationId_id_key" ON "passes"("organisationId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "entitlements_organisationId_id_key" ON "entitlements"("organisationId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "redemptions_entitlementId_key" ON "redemptions"("entitlementId");

-- CreateIndex
CREATE INDEX "redemptions_organisationId_passId_idx" ON "redemptions"("organisationId", "passId");

-- CreateIndex
CREATE INDEX "webhook_endpoints_organisationId_accountId_idx" ON "webhook_endpoints"("organisationId", "accountId");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_endpoints_organisationId_id_key" ON "webhook_endpoints"("organisationId", "id");

-- CreateIndex
CREATE INDEX "webhook_events_organisationId_accountId_createdAt_idx" ON "webhook_events"("organisationId", "accountId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_events_organisationId_id_key" ON "webhook_events"("organisationId", "id");

-- CreateIndex
CREATE INDEX "webhook_deliveries_organisationId_endpointId_createdAt_idx" ON "webhook_deliveries"("organisationId", "endpointId", "createdAt");

-- CreateIndex
CREATE INDEX "webhook_deliveries_workflowStartedAt_createdAt_idx" ON "webhook_deliveries"("workflowStartedAt", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_deliveries_organisationId_id_key" ON "webhook_deliveries"("organisationId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_deliveries_eventId_endpointId_key" ON "webhook_deliveries"("eventId", "endpointId");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_attempts_deliveryId_attemptNumber_key" ON "webhook_attempts"("deliveryId", "attemptNumber");

-- CreateIndex
CREATE INDEX "outbox_messages_to_createdAt_idx" ON "outbox_messages"("to", "createdAt");

-- AddForeignKey
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "password_credentials" ADD CONSTRAINT "password_credentials_personId_fkey" FOREIGN KEY ("personId") REFERENCES "people"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "users" ADD CONSTRAINT "users_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "users" ADD CONSTRAINT "users_personId_fkey" FOREIGN KEY ("personId") REFERENCES "people"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "users" ADD CONSTRAINT "users_identityProviderId_fkey" FOREIGN KEY ("identityProviderId") REFERENCES "identity_providers"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "refresh_tokens" ADD CONSTRAINT "refresh_tokens_personId_fkey" FOREIGN KEY ("personId") REFERENCES "people"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "refresh_tokens" ADD CONSTRAINT "refresh_tokens_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "identity_providers" ADD CONSTRAINT "identity_providers_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "invitations" ADD CONSTRAINT "invitations_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "invitations" ADD CONSTRAINT "invitations_organisationId_userId_fkey" FOREIGN KEY ("organisationId", "userId") REFERENCES "users"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "roles" ADD CONSTRAINT "roles_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "role_assignments" ADD CONSTRAINT "role_assignments_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "role_assignments" ADD CONSTRAINT "role_assignments_organisationId_userId_fkey" FOREIGN KEY ("organisationId", "userId") REFERENCES "users"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "role_assignments" ADD CONSTRAINT "role_assignments_organisationId_accountId_fkey" FOREIGN KEY ("organisationId", "accountId") REFERENCES "accounts"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "role_assignments" ADD CONSTRAINT "role_assignments_organisationId_roleId_fkey" FOREIGN KEY ("organisationId", "roleId") REFERENCES "roles"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_organisationId_accountId_fkey" FOREIGN KEY ("organisationId", "accountId") REFERENCES "accounts"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_organisationId_createdById_fkey" FOREIGN KEY ("organisationId", "createdById") REFERENCES "users"("organisationId", "id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "embed_sessions" ADD CONSTRAINT "embed_sessions_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "embed_sessions" ADD CONSTRAINT "embed_sessions_organisationId_accountId_fkey" FOREIGN KEY ("organisationId", "accountId") REFERENCES "accounts"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "embed_sessions" ADD CONSTRAINT "embed_sessions_organisationId_apiKeyId_fkey" FOREIGN KEY ("organisationId", "apiKeyId") REFERENCES "api_keys"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "venues" ADD CONSTRAINT "venues_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "venues" ADD CONSTRAINT "venues_organisationId_accountId_fkey" FOREIGN KEY ("organisationId", "accountId") REFERENCES "accounts"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "events" ADD CONSTRAINT "events_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "events" ADD CONSTRAINT "events_organisationId_accountId_fkey" FOREIGN KEY ("organisationId", "accountId") REFERENCES "accounts"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "events" ADD CONSTRAINT "events_organisationId_venueId_fkey" FOREIGN KEY ("organisationId", "venueId") REFERENCES "venues"("organisationId", "id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "event_occurrences" ADD CONSTRAINT "event_occurrences_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "event_occurrences" ADD CONSTRAINT "event_occurrences_organisationId_eventId_fkey" FOREIGN KEY ("organisationId", "eventId") REFERENCES "events"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ticket_types" ADD CONSTRAINT "ticket_types_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ticket_types" ADD CONSTRAINT "ticket_types_organisationId_eventId_fkey" FOREIGN KEY ("organisationId", "eventId") REFERENCES "events"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "products" ADD CONSTRAINT "products_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "products" ADD CONSTRAINT "products_organisationId_eventId_fkey" FOREIGN KEY ("organisationId", "eventId") REFERENCES "events"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "inventories" ADD CONSTRAINT "inventories_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "inventories" ADD CONSTRAINT "inventories_organisationId_ticketTypeId_fkey" FOREIGN KEY ("organisationId", "ticketTypeId") REFERENCES "ticket_types"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "inventories" ADD CONSTRAINT "inventories_organisationId_occurrenceId_fkey" FOREIGN KEY ("organisationId", "occurrenceId") REFERENCES "event_occurrences"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sales_channels" ADD CONSTRAINT "sales_channels_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sales_channels" ADD CONSTRAINT "sales_channels_organisationId_accountId_fkey" FOREIGN KEY ("organisationId", "accountId") REFERENCES "accounts"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sales_channel_events" ADD CONSTRAINT "sales_channel_events_organisationId_channelId_fkey" FOREIGN KEY ("organisationId", "channelId") REFERENCES "sales_channels"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sales_channel_events" ADD CONSTRAINT "sales_channel_events_organisationId_eventId_fkey" FOREIGN KEY ("organisationId", "eventId") REFERENCES "events"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "channel_keys" ADD CONSTRAINT "channel_keys_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "channel_keys" ADD CONSTRAINT "channel_keys_organisationId_channelId_fkey" FOREIGN KEY ("organisationId", "channelId") REFERENCES "sales_channels"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "customers" ADD CONSTRAINT "customers_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "customers" ADD CONSTRAINT "customers_organisationId_accountId_fkey" FOREIGN KEY ("organisationId", "accountId") REFERENCES "accounts"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "customer_login_codes" ADD CONSTRAINT "customer_login_codes_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sales_sessions" ADD CONSTRAINT "sales_sessions_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sales_sessions" ADD CONSTRAINT "sales_sessions_organisationId_channelId_fkey" FOREIGN KEY ("organisationId", "channelId") REFERENCES "sales_channels"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sales_sessions" ADD CONSTRAINT "sales_sessions_organisationId_customerId_fkey" FOREIGN KEY ("organisationId", "customerId") REFERENCES "customers"("organisationId", "id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "carts" ADD CONSTRAINT "carts_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "carts" ADD CONSTRAINT "carts_organisationId_channelId_fkey" FOREIGN KEY ("organisationId", "channelId") REFERENCES "sales_channels"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "carts" ADD CONSTRAINT "carts_organisationId_sessionId_fkey" FOREIGN KEY ("organisationId", "sessionId") REFERENCES "sales_sessions"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "cart_items" ADD CONSTRAINT "cart_items_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "cart_items" ADD CONSTRAINT "cart_items_organisationId_cartId_fkey" FOREIGN KEY ("organisationId", "cartId") REFERENCES "carts"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "cart_items" ADD CONSTRAINT "cart_items_organisationId_ticketTypeId_fkey" FOREIGN KEY ("organisationId", "ticketTypeId") REFERENCES "ticket_types"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "cart_items" ADD CONSTRAINT "cart_items_organisationId_occurrenceId_fkey" FOREIGN KEY ("organisationId", "occurrenceId") REFERENCES "event_occurrences"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "orders" ADD CONSTRAINT "orders_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "orders" ADD CONSTRAINT "orders_organisationId_accountId_fkey" FOREIGN KEY ("organisationId", "accountId") REFERENCES "accounts"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "orders" ADD CONSTRAINT "orders_organisationId_channelId_fkey" FOREIGN KEY ("organisationId", "channelId") REFERENCES "sales_channels"("organisationId", "id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "orders" ADD CONSTRAINT "orders_organisationId_customerId_fkey" FOREIGN KEY ("organisationId", "customerId") REFERENCES "customers"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "orders" ADD CONSTRAINT "orders_cartId_fkey" FOREIGN KEY ("cartId") REFERENCES "carts"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "order_line_items" ADD CONSTRAINT "order_line_items_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "order_line_items" ADD CONSTRAINT "order_line_items_organisationId_orderId_fkey" FOREIGN KEY ("organisationId", "orderId") REFERENCES "orders"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "order_line_items" ADD CONSTRAINT "order_line_items_organisationId_ticketTypeId_fkey" FOREIGN KEY ("organisationId", "ticketTypeId") REFERENCES "ticket_types"("organisationId", "id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "order_line_items" ADD CONSTRAINT "order_line_items_organisationId_occurrenceId_fkey" FOREIGN KEY ("organisationId", "occurrenceId") REFERENCES "event_occurrences"("organisationId", "id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "payments" ADD CONSTRAINT "payments_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "payments" ADD CONSTRAINT "payments_organisationId_orderId_fkey" FOREIGN KEY ("organisationId", "orderId") REFERENCES "orders"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "passes" ADD CONSTRAINT "passes_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "passes" ADD CONSTRAINT "passes_organisationId_orderId_fkey" FOREIGN KEY ("organisationId", "orderId") REFERENCES "orders"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "passes" ADD CONSTRAINT "passes_organisationId_lineItemId_fkey" FOREIGN KEY ("organisationId", "lineItemId") REFERENCES "order_line_items"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "passes" ADD CONSTRAINT "passes_organisationId_customerId_fkey" FOREIGN KEY ("organisationId", "customerId") REFERENCES "customers"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "passes" ADD CONSTRAINT "passes_organisationId_ticketTypeId_fkey" FOREIGN KEY ("organisationId", "ticketTypeId") REFERENCES "ticket_types"("organisationId", "id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "passes" ADD CONSTRAINT "passes_organisationId_occurrenceId_fkey" FOREIGN KEY ("organisationId", "occurrenceId") REFERENCES "event_occurrences"("organisationId", "id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "entitlements" ADD CONSTRAINT "entitlements_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "entitlements" ADD CONSTRAINT "entitlements_organisationId_passId_fkey" FOREIGN KEY ("organisationId", "passId") REFERENCES "passes"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "redemptions" ADD CONSTRAINT "redemptions_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "redemptions" ADD CONSTRAINT "redemptions_organisationId_passId_fkey" FOREIGN KEY ("organisationId", "passId") REFERENCES "passes"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "redemptions" ADD CONSTRAINT "redemptions_entitlementId_fkey" FOREIGN KEY ("entitlementId") REFERENCES "entitlements"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_organisationId_accountId_fkey" FOREIGN KEY ("organisationId", "accountId") REFERENCES "accounts"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_events" ADD CONSTRAINT "webhook_events_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_organisationId_eventId_fkey" FOREIGN KEY ("organisationId", "eventId") REFERENCES "webhook_events"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_organisationId_endpointId_fkey" FOREIGN KEY ("organisationId", "endpointId") REFERENCES "webhook_endpoints"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_organisationId_fkey" FOREIGN KEY ("organisationId") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_organisationId_deliveryId_fkey" FOREIGN KEY ("organisationId", "deliveryId") REFERENCES "webhook_deliveries"("organisationId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Invariants the database enforces whatever the code does (Prisma's schema language has no CHECK).
ALTER TABLE "inventories" ADD CONSTRAINT "inventories_counts_check"
  CHECK ("held" >= 0 AND "sold" >= 0 AND ("capacity" IS NULL OR "held" + "sold" <= "capacity"));
ALTER TABLE "ticket_types" ADD CONSTRAINT "ticket_types_money_check"
  CHECK ("priceAmount" >= 0 AND "currency" ~ '^[A-Z]{3}$' AND ("capacity" IS NULL OR "capacity" >= 0));
ALTER TABLE "products" ADD CONSTRAINT "products_money_check"
  CHECK ("priceAmount" >= 0 AND "currency" ~ '^[A-Z]{3}$');
ALTER TABLE "cart_items" ADD CONSTRAINT "cart_items_quantity_check" CHECK ("quantity" > 0);
ALTER TABLE "orders" ADD CONSTRAINT "orders_money_check"
  CHECK ("subtotalAmount" >= 0 AND "feeAmount" >= 0 AND "totalAmount" >= 0 AND "currency" ~ '^[A-Z]{3}$');
ALTER TABLE "order_line_items" ADD CONSTRAINT "order_line_items_money_check"
  CHECK ("quantity" > 0 AND "unitAmount" >= 0 AND "totalAmount" = "unitAmount" * "quantity");
ALTER TABLE "payments" ADD CONSTRAINT "payments_money_check" CHECK ("amount" >= 0);
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_attempts_check" CHECK ("attemptCount" >= 0);
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_number_check" CHECK ("attemptNumber" >= 1);
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_name_check" CHECK (char_length("name") BETWEEN 1 AND 255);
ALTER TABLE "organisations" ADD CONSTRAINT "organisations_name_check" CHECK (char_length("name") BETWEEN 1 AND 255);
ALTER TABLE "roles" ADD CONSTRAINT "roles_name_check"
  CHECK (char_length("name") BETWEEN 1 AND 255 AND ("description" IS NULL OR char_length("description") <= 500)
         AND cardinality("permissions") >= 1);
