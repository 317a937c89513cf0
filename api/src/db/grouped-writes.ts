/**
 * Group commit: items added while a group is written are written together by the next one (at most
 * `max` a group), so N requests at once cost about two writes, not N, and a lone item is written at
 * once. Each group commits on its own (one statement, or one transaction that `writeAll` runs): an
 * item's promise settles once the write that carried it committed, or failed. A group that fails is
 * tried again item by item, so an item that cannot be written fails alone.
 *
 * Only for writes that need no transaction with anything else (`Transact.selfCommitting`'s `alone`).
 */
export class GroupedWrites<T, R> {
  private queue: { item: T; resolve: (result: R) => void; reject: (err: unknown) => void }[] = [];
  private writing = false;
  /** Statements run and items written (for logs and tests). */
  readonly stats = { statements: 0, items: 0 };

  /**
   * @param writeAll writes the items atomically (one statement or one transaction) and returns each one's result, in their order
   *   (it throws when it cannot write all of them).
   */
  constructor(
    private readonly writeAll: (items: T[]) => Promise<R[]>,
    private readonly max = 256,
  ) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.writing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length > 0) await this.write(this.queue.splice(0, this.max));
    } finally {
      this.writing = false;
    }
  }

  private async write(batch: GroupedWrites<T, R>["queue"]): Promise<void> {
    this.stats.statements++;
    let results: R[];
    try {
      results = await this.writeAll(batch.map((entry) => entry.item));
      if (results.length !== batch.length) throw new Error(`a grouped write returned ${results.length} results for ${batch.length} items`);
    } catch (err) {
      if (batch.length === 1) batch[0]!.reject(err);
      else for (const entry of batch) await this.write([entry]);
      return;
    }
    this.stats.items += batch.length;
    batch.forEach((entry, i) => entry.resolve(results[i]!));
  }
}
