/**
 * Statements whose SQL Kysely builds once and that run again with new values: `CompiledInsert`, a
 * multi-row insert built once per shape (row count and column list), and `CompiledStatement`, a
 * statement run per event with new parameters.
 *
 * The event outbox and the message store write every tick with the same few statements. Building
 * them anew each time (Kysely's immutable builders, the value parser, the compiler) cost about 5 %
 * of the send road's main thread; the SQL text only changes with the number of rows. The text is
 * reused only when Kysely's own parameters for the first batch of a shape were exactly the row
 * values in order: a statement whose parameters come from elsewhere (a literal in `onConflict`, a
 * value Kysely leaves out) is built every time, as before.
 *
 * The text depends on the dialect: keep one of each per database (a store's own field).
 */
import { CompiledQuery, type Compilable, type Kysely, type QueryResult } from 'kysely';

/** Shapes remembered (most used first out last); a tick has at most a few hundred rows. */
const SHAPES = 512;

export class CompiledInsert<Row extends object, Result = unknown> {
  /** SQL text per shape; null when the shape's parameters are not the row values. */
  private readonly texts = new Map<string, string | null>();

  constructor(private readonly build: (db: Kysely<any>, rows: Row[]) => Compilable<Result>) {}

  async execute(db: Kysely<any>, rows: Row[]): Promise<Result[]> {
    return (await this.run(db, rows)).rows;
  }

  /** The whole result: with a write's `insertId` and `numAffectedRows`. */
  async run(db: Kysely<any>, rows: Row[]): Promise<QueryResult<Result>> {
    const columns = Object.keys(rows[0]!);
    const values = valuesOf(rows, columns);
    const shape = values && `${rows.length}\u0000${columns.join('\u0000')}`;
    const text = shape === undefined ? null : this.texts.get(shape);
    if (text) {
      this.texts.delete(shape!);
      this.texts.set(shape!, text);
      return db.executeQuery<Result>(CompiledQuery.raw(text, values));
    }
    const compiled = this.build(db, rows).compile();
    if (shape !== undefined && text === undefined) {
      if (this.texts.size >= SHAPES) this.texts.delete(this.texts.keys().next().value!);
      this.texts.set(shape, sameValues(compiled.parameters, values!) ? compiled.sql : null);
    }
    return db.executeQuery(compiled);
  }
}

/**
 * A statement whose SQL Kysely builds once, then runs again with each call's parameters: for the
 * reads made per event (a webhook lane's page read, one per wake: with many instances one per
 * event), where building the query cost more than SQLite's read of its row. The text is reused only
 * when Kysely's parameters for the first call were exactly the arguments in order; otherwise every
 * call builds it, as before.
 */
export class CompiledStatement<Parameters extends readonly unknown[], Result> {
  /** Undefined until the first call; null when the parameters are not the arguments. */
  private text: string | null | undefined;

  constructor(private readonly build: (db: Kysely<any>, ...parameters: Parameters) => Compilable<Result>) {}

  async execute(db: Kysely<any>, ...parameters: Parameters): Promise<Result[]> {
    if (this.text) return (await db.executeQuery<Result>(CompiledQuery.raw(this.text, [...parameters]))).rows;
    const compiled = this.build(db, ...parameters).compile();
    if (this.text === undefined) this.text = sameValues(compiled.parameters, parameters) ? compiled.sql : null;
    return (await db.executeQuery(compiled)).rows;
  }
}

/**
 * The rows' values, row by row in `columns` order; undefined unless every row has exactly these
 * columns, none of them undefined (Kysely leaves undefined values out of the statement).
 */
function valuesOf(rows: readonly object[], columns: readonly string[]): unknown[] | undefined {
  const values = new Array<unknown>(rows.length * columns.length);
  let at = 0;
  for (const row of rows) {
    let count = 0;
    for (const key in row) if (Object.hasOwn(row, key)) count += 1;
    if (count !== columns.length) return undefined;
    for (const column of columns) {
      const value = (row as Record<string, unknown>)[column];
      if (value === undefined) return undefined;
      values[at++] = value;
    }
  }
  return values;
}

function sameValues(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}
