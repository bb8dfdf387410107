export declare const CHROMIUM: string;
export declare const CHROMIUM_ARGS: string[];
export declare function ensureChromium(log?: (line: string) => void): string;
export declare function ensureWebBuilt(root: string, log?: (line: string) => void): void;
