/**
 * The statements Kysely sends to PostgreSQL: the ones it runs again and again are prepared once per
 * connection, under a name.
 *
 * Kysely sends every statement unnamed, so PostgreSQL parses, analyses and plans it on every
 * execution: on the storage bench most of a read's server time (named, the chat list, `/chat/history`
 * and `/message/find` answered 1.2–1.6 times the requests a second: bench/README's twenty-eighth run).
 * PostgreSQL keeps a named statement's plan for the connection, planned for the first five
 * executions' parameters and then generic when that costs no more.
 *
 * Not every statement is named:
 * - only one with parameters (not begin, commit, savepoints or DDL);
 * - only from its second execution (one-off texts, such as lists of varying length, stay unnamed),
 *   at most `perConnection` per connection (each costs the server's backend its plan);
 * - not one that selects or returns `*`: another process's migration adding a column would fail it
 *   with "cached plan must not change result type" (a rolling upgrade);
 * - not one with a LIKE pattern, whose best plan depends on the pattern (a generic plan made the
 *   text search slower);
 * - not before the migrations have run (`start`): their statements change the tables.
 * A transaction-mode pooler in front of PostgreSQL (PgBouncer before 1.21) cannot hold named
 * statements: DATABASE_PREPARED_STATEMENTS=false turns naming off.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { RecentlyUsedMap } from '../bounded-maps.js';

/** Named statements a connection keeps at most (further texts run unnamed on it). */
export const NAMED_PER_CONNECTION = 100;
/** Statement texts remembered (named, seen once, or never to be named), most recently used kept. */
const TEXTS_KEPT = 2_000;

/** What is known of a text: its name, `null` seen once so far, `false` never to be named. */
type Decision = string | null | false;

/** A select list or RETURNING of `*` (`select *`, `"c".*`, `returning *`), not `count(*)`. */
const STAR_LIST = /(?:\bselect(?:\s+distinct)?|\breturning|,)\s+(?:"[^"]+"\.)?\*/i;
const LIKE = /\blike\b/i;

type Query = pg.ClientBase['query'];

export class PreparedStatements {
  private readonly texts = new RecentlyUsedMap<string, Decision>(TEXTS_KEPT);
  private started = false;

  constructor(private readonly perConnection = NAMED_PER_CONNECTION) {}

  /** From now on repeated statements are named (after the migrations). */
  start(): void {
    this.started = true;
  }

  /** The name `text` runs under, or undefined to run it unnamed. */
  nameOf(text: string): string | undefined {
    if (!this.started) return undefined;
    const known = this.texts.get(text);
    if (known === false) return undefined;
    if (known === undefined) {
      this.texts.set(text, STAR_LIST.test(text) || LIKE.test(text) ? false : null);
      return undefined;
    }
    if (known !== null) return known;
    // Deterministic: a text forgotten and seen again gets the name its connections already hold.
    const name = `w${createHash('sha1').update(text).digest('base64url').slice(0, 24)}`;
    this.texts.set(text, name);
    return name;
  }

  /** Makes `client` run named what `nameOf` names, up to `perConnection` names of its own. */
  attach(client: pg.ClientBase): void {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    const prepared = new Set<string>();
    const named = ((config: unknown, values?: unknown, callback?: unknown) => {
      // Statements without parameters (begin, commit, savepoints, DDL) stay unnamed.
      if (typeof config === 'string' && Array.isArray(values) && values.length > 0) {
        const name = this.nameOf(config);
        if (name !== undefined && (prepared.has(name) || prepared.size < this.perConnection)) {
          prepared.add(name);
          return query({ name, text: config, values }, callback);
        }
      }
      return query(config, values, callback);
    }) as Query;
    client.query = named;
  }
}
