/**
 * Fixed names that the gateway and the web interface both use: the 13 SPEC event types (SPEC's
 * order), button kinds, Pix key types, status-post fonts, alert rule kinds and failover policies.
 * The web interface (web/src) imports this file as it is, so it stays free of imports and of Node
 * APIs: one list for both. A foundation module: any layer may import it.
 */
export const EVENT_TYPES = [
  'MESSAGE',
  'SEND_MESSAGE',
  'READ_RECEIPT',
  'PRESENCE',
  'HISTORY_SYNC',
  'CHAT_PRESENCE',
  'CALL',
  'CONNECTION',
  'LABEL',
  'CONTACT',
  'GROUP',
  'NEWSLETTER',
  'QRCODE',
] as const;

export const BUTTON_TYPES = ['reply', 'url', 'call', 'copy'] as const;
export type ButtonType = (typeof BUTTON_TYPES)[number];

export const PIX_KEY_TYPES = ['CPF', 'CNPJ', 'PHONE', 'EMAIL', 'EVP'] as const;
export type PixKeyType = (typeof PIX_KEY_TYPES)[number];

/** Fonts of text status posts, with the number the network uses for each. */
export const STATUS_FONTS = {
  SYSTEM: 0,
  SYSTEM_TEXT: 1,
  FB_SCRIPT: 2,
  SYSTEM_BOLD: 6,
  MORNINGBREEZE_REGULAR: 7,
  CALISTOGA_REGULAR: 8,
  EXO2_EXTRABOLD: 9,
  COURIERPRIME_BOLD: 10,
} as const;
export type StatusFont = keyof typeof STATUS_FONTS;

/** What an alert rule watches (src/admin/alerts). */
export const ALERT_KINDS = ['instance_disconnected', 'health_below', 'dead_letters_above', 'channel_down', 'outbox_backlog_above'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

/** How a failover group picks the member that sends (src/admin/failover). */
export const FAILOVER_POLICIES = ['priority', 'round-robin', 'least-loaded'] as const;
export type FailoverPolicy = (typeof FAILOVER_POLICIES)[number];
