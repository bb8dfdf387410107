export declare const NGINX: string;
export declare function ensureNginx(log?: (line: string) => void): string;
