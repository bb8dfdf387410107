export declare const PROMTOOL: string;
export declare function ensurePromtool(log?: (line: string) => void): string;
