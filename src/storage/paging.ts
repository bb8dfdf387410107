/** Paged listings read from the database. */

/**
 * The number of rows matching a listing, from its page when the page tells it: a `total` column
 * (a count the page statement carried, on any of its rows), or a page that is not full (then it
 * holds the last of them). Undefined when it must be counted: a full page, or none past the end.
 */
export function totalOf(rows: readonly object[], page: { offset: number; limit: number }): number | undefined {
  const counted = (rows[0] as { total?: number | string | null } | undefined)?.total;
  if (counted !== undefined && counted !== null) return Number(counted);
  if (rows.length < page.limit && (rows.length > 0 || page.offset === 0)) return page.offset + rows.length;
  return undefined;
}
