/**
 * Content negotiation on /graphql as Yoga reads an Accept header (its
 * plugins/result-processor/accept.js and use-result-processor.js): whitespace dropped, no header
 * read as accepting anything, types with a charset other than utf-8 skipped, and of the types that
 * match one the server answers with, the first one listed wins.
 */
export function negotiatedMediaType(accept: string | null | undefined, answered: readonly string[]): string | undefined {
  const requested = (accept || '*/*').replace(/\s/g, '').toLowerCase().split(',').reverse();
  let chosen: string | undefined;
  for (const part of requested) {
    const [type = '', ...params] = part.split(';');
    if ((params.find((param) => param.includes('charset=')) ?? 'charset=utf-8') !== 'charset=utf-8') continue;
    const [pre, suf] = type.split('/');
    for (const candidate of answered) {
      const [candidatePre, candidateSuf] = candidate.split('/');
      if ((pre === '*' || pre === candidatePre) && (suf === '*' || suf === candidateSuf)) chosen = candidate;
    }
  }
  return chosen;
}

const JSON_MEDIA_TYPES = ['application/graphql-response+json', 'application/json'];

/** The JSON media type a (non-streamed) result is answered with for this Accept header, if any. */
export function negotiatedJsonMediaType(accept: string | null | undefined): string | undefined {
  return negotiatedMediaType(accept, JSON_MEDIA_TYPES);
}

/** What a subscription is answered as: server-sent events (src/live/sse.ts). */
export const SUBSCRIPTION_MEDIA_TYPES: readonly string[] = ['text/event-stream'];
/** What a query or mutation is answered as, in the order Yoga prefers them. */
export const ANSWER_MEDIA_TYPES: readonly string[] = ['text/event-stream', 'multipart/mixed', ...JSON_MEDIA_TYPES];
