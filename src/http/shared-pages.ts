import type { ChangeSubscriber } from '../db/change-notices.ts';

/**
 * Pages every caller of one key sees alike (a sales channel's listings), read once and shared: a
 * request for a page being read already gets that read's answer, and for `freshMs` after a read
 * started its answer serves every request for the page. A change of the organisation's catalogue
 * forgets its pages, in this process at once (ResultCache's mutations tell it) and in every other
 * when PostgreSQL's change notice arrives (`tables`); while notices are not known to arrive, only
 * reads in flight are shared. What `tables` leaves out (sales moving the inventory) shows at most
 * `freshMs` late. At most `max` pages are kept; a failed read is not.
 *
 * A request for a page that is being read again waits for that read, rather than getting the page
 * before it: under an on-sale, buyers waiting here hold nothing, and the ones served the older page
 * at once only queued at the cart and at payment instead, whose p99 doubled (bench/README.md,
 * "On-sale"). src/http/shared-pages.test.ts.
 */
export class SharedPages<T> implements ChangeSubscriber {
  #pages = new Map<string, { organisationId: string; startedAt: number; settled: boolean; answer: Promise<T> }>();

  constructor(
    readonly freshMs: number,
    private readonly canKeep: () => boolean,
    readonly tables: ReadonlySet<string>,
    private readonly max = 1_000,
  ) {}

  changed(organisationId: string): void {
    this.forgetOrganisation(organisationId);
  }

  forgetAll(): void {
    this.#pages.clear();
  }

  forgetOrganisation(organisationId: string): void {
    for (const [key, page] of this.#pages) if (page.organisationId === organisationId) this.#pages.delete(key);
  }

  /** The page of `key` (which must name the organisation and everything the page depends on), read by `read` if need be. */
  get(organisationId: string, key: string, read: () => Promise<T>): Promise<T> {
    const now = Date.now();
    const known = this.#pages.get(key);
    if (known && (!known.settled || (this.canKeep() && now - known.startedAt < this.freshMs))) return known.answer;
    this.#pages.delete(key);
    if (this.#pages.size >= this.max) this.#pages.delete(this.#pages.keys().next().value!);
    const page = { organisationId, startedAt: now, settled: false, answer: read() };
    this.#pages.set(key, page);
    page.answer.then(
      () => {
        page.settled = true;
        if (this.freshMs <= 0 && this.#pages.get(key) === page) this.#pages.delete(key);
      },
      () => {
        if (this.#pages.get(key) === page) this.#pages.delete(key);
      },
    );
    return page.answer;
  }
}
