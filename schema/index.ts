import { builder } from './builder.ts';
import './types/api-version.ts';
import './types/auth.ts';
import './types/me.ts';
import './types/role.ts';
import './types/role-assignment.ts';
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

export const schema = builder.toSchema({ sortSchema: false });
