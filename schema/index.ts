import { builder } from './builder.ts';
import './types/api-version.ts';

export const schema = builder.toSchema({ sortSchema: false });
