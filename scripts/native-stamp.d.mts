// Types of native-stamp.mjs for the TypeScript that imports it (the test setup).
export declare const ROOT: string;
export declare const ADDON: string;
export declare const STAMP: string;
export declare function nativeSourcesHash(root?: string): string;
