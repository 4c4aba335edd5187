import { builder } from './builder.ts';
import './types/api-version.ts';
import './types/auth.ts';
import './types/me.ts';

export const schema = builder.toSchema({ sortSchema: false });
