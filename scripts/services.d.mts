export declare const SERVICES: { name: string; port: number; start: string; waitMs?: number }[];
export declare function portOpen(port: number, host?: string, timeoutMs?: number): Promise<boolean>;
export declare function ensureServices(log?: (line: string) => void): Promise<string[]>;
