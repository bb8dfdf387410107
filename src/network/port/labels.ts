/** Port capability: Labels of WhatsApp Business accounts. */
import type { PageOf, PageRequest } from '../port.js';

export interface Label {
  labelId: string;
  name: string;
  /** Colour index 0..19 of the WhatsApp Business palette. */
  color: number;
}

export interface LabelTarget {
  chatId: string;
  messageId?: string;
}

export interface LabelOperations {
  list(page: PageRequest): Promise<PageOf<Label>>;
  create(name: string, color: number): Promise<Label>;
  edit(labelId: string, changes: { name?: string; color?: number }): Promise<Label>;
  delete(labelId: string): Promise<void>;
  /** Returns the label ids now on the target. */
  apply(labelId: string, target: LabelTarget): Promise<string[]>;
  remove(labelId: string, target: LabelTarget): Promise<string[]>;
}
