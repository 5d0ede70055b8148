/**
 * A WHERE clause built filter by filter, with its bound parameters in the same order (the audit
 * trail's query and the alerts' page): every filter value is a parameter, never SQL text. The
 * events search builds its own (event-query.ts): it picks indexes and drivers as it goes.
 */
export class Where {
  readonly clauses: string[] = [];
  readonly params: unknown[] = [];

  /** One condition, with the values of its `?` in order. */
  add(clause: string, ...params: unknown[]): this {
    this.clauses.push(clause);
    this.params.push(...params);
    return this;
  }

  /** `column IN (?, …)` when `values` has any; no condition for none. */
  anyOf(column: string, values: readonly unknown[] | undefined): this {
    return values?.length ? this.add(`${column} IN (${values.map(() => '?').join(', ')})`, ...values) : this;
  }

  /** [start, end) on `column` (ms UTC), each bound only when given. */
  within(column: string, start: number | undefined, end: number | undefined): this {
    if (start !== undefined) this.add(`${column} >= ?`, start);
    if (end !== undefined) this.add(`${column} < ?`, end);
    return this;
  }
}
