import { builder } from '../builder.ts';

export const DeleteResult = builder.objectRef<{ success: boolean; id: string }>('DeleteResult').implement({
  description: 'The outcome of a deletion.',
  fields: (t) => ({
    success: t.exposeBoolean('success', { description: 'Whether the thing was deleted.' }),
    id: t.exposeString('id', { description: 'Id of the deleted thing.' }),
  }),
});

export const SuccessResult = builder.objectRef<{ success: boolean }>('SuccessResult').implement({
  description: 'The outcome of an operation that answers nothing else.',
  fields: (t) => ({
    success: t.exposeBoolean('success', { description: 'Whether it succeeded.' }),
  }),
});
