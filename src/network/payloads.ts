/**
 * Reading message payloads (the WhatsApp JSON shape both drivers emit): what a payload does to an
 * earlier message (revoke, edit) and how an edit applies to the original.
 */

/** What a message payload does to an earlier message of its chat: delete it for everyone, or edit it. */
export type MessageChange = { kind: 'revoke'; targetId: string } | { kind: 'edit'; targetId: string; edited: Record<string, unknown> };

// WhatsApp's ProtocolMessage.Type numbers, for payloads that carry enums as numbers.
const PROTOCOL_REVOKE = 0;
const PROTOCOL_MESSAGE_EDIT = 14;

function objectOf(value: unknown): Record<string, unknown> | undefined {
  return value && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
}

/**
 * The change a payload makes: `protocolMessage` REVOKE, or MESSAGE_EDIT bare (the sender's copy) or
 * inside `editedMessage.message` (as recipients get it). Undefined for every other payload.
 */
export function messageChangeOf(message: Record<string, unknown>): MessageChange | undefined {
  const wrapped = objectOf(objectOf(message.editedMessage)?.message);
  const protocol = objectOf((wrapped ?? message).protocolMessage);
  const targetId = objectOf(protocol?.key)?.id;
  if (!protocol || typeof targetId !== 'string') return undefined;
  if (protocol.type === 'REVOKE' || protocol.type === PROTOCOL_REVOKE) return { kind: 'revoke', targetId };
  const edited = objectOf(protocol.editedMessage);
  if ((protocol.type === 'MESSAGE_EDIT' || protocol.type === PROTOCOL_MESSAGE_EDIT) && edited) return { kind: 'edit', targetId, edited };
  return undefined;
}

/** A text message with the text of an edit, in the original's shape; undefined when the edit has no text. */
export function withEditedText(original: Record<string, unknown>, edited: Record<string, unknown>): Record<string, unknown> | undefined {
  const text = typeof edited.conversation === 'string' ? edited.conversation : objectOf(edited.extendedTextMessage)?.text;
  if (typeof text !== 'string') return undefined;
  const extended = objectOf(original.extendedTextMessage);
  return extended ? { ...original, extendedTextMessage: { ...extended, text } } : { ...original, conversation: text };
}
