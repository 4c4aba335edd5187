import type { Organisation } from '../generated/prisma/client.ts';
import type { Access } from './permissions.ts';

/**
 * Who a request is from, as authentication (src/auth/authenticate.ts) found it. Its own module so
 * the credential kinds (channel keys, tokens) and the result cache can name it without importing
 * the authenticator that imports them.
 */
export type Principal =
  | {
      kind: 'staff';
      personId: string;
      /** The person's user in the request's organisation; null when no organisation was named. */
      userId: string | null;
      email: string;
      /** The organisation carried by the access token, when one was chosen at sign-in. */
      tokenOrganisationId: string | null;
    }
  | { kind: 'apiKey'; apiKeyId: string; accountId: string | null; scopes: string[] }
  | { kind: 'embed'; sessionId: string; accountId: string; scopes: string[]; expiresAt: Date }
  /**
   * A sales channel key (svpk_ publishable, svsk_ secret): the sales API only. Every management
   * scope refuses it (schema/builder.ts); `keyKind` lets server-only operations require a secret key.
   */
  | {
      kind: 'channel';
      channelKeyId: string;
      channelId: string;
      accountId: string;
      keyKind: 'publishable' | 'secret';
      /** A signed-in shopper: the customer token sent beside the key (src/auth/channel-keys.ts). */
      customerId?: string;
    }
  /** A storefront customer's token (POST /live/sales/customer-tokens): GET /live/sales/me/orders only. */
  | { kind: 'customer'; customerId: string; accountId: string };

export interface Authentication {
  principal: Principal | null;
  organisation: Organisation | null;
  access: Access;
}
