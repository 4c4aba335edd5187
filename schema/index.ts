import { builder } from './builder.ts';
import { relayArgumentsOnly } from './public.ts';
import './types/api-version.ts';
import './types/auth.ts';
import './types/me.ts';
import './types/user.ts';
import './types/role.ts';
import './types/role-assignment.ts';
import './types/explain-access.ts';
import './types/api-key.ts';
import './types/embed-session.ts';
import './types/identity-provider.ts';
import './types/invitation.ts';
import './types/organisation.ts';
import './types/account.ts';
import './types/venue.ts';
import './types/event.ts';
import './types/occurrence.ts';
import './types/ticket-type.ts';
import './types/partner.ts';
import './types/sales-channel.ts';
import './types/listing.ts';
import './types/webhook.ts';
import './types/webhook-event.ts';
import './types/order.ts';
import './types/cart.ts';
import './types/audit.ts';
import './types/versioned-fields.ts';
import './types/live.ts';

/** Every operation: /v1 and /live run theirs on this one. */
export const schema = builder.toSchema({ sortSchema: false });

/** What /graphql serves and schema/schema.graphql prints: connections take the Relay arguments only. */
export const publicSchema = relayArgumentsOnly(schema);
