/** The one paging rule of the drivers: a page of a list held whole (the sandbox world, lists WhatsApp answers whole). */
import type { PageOf, PageRequest } from './port.js';

export function pageOf<T>(all: readonly T[], page: PageRequest): PageOf<T> {
  return { items: all.slice(page.offset, page.offset + page.limit), total: all.length };
}
