export declare const STAMP: string;
export declare function sourcesHash(): string;
export declare function isBuilt(hash?: string): boolean;
