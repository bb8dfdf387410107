/** Message content kinds that change another message instead of being one: never stored as history. */
export const UPDATE_KINDS: ReadonlySet<string> = new Set(['reactionMessage', 'protocolMessage', 'pollUpdateMessage', 'editedMessage']);

/** Whether a message payload carries an update kind (a reaction, a revoke or edit, a poll vote). */
export function carriesUpdate(content: Record<string, unknown>): boolean {
  return Object.keys(content).some((kind) => UPDATE_KINDS.has(kind));
}
