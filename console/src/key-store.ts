// The API key lives in this tab's sessionStorage only: gone when the tab closes, never in a cookie
// (so the server has no ambient credential to be tricked into using) and never in a URL.
const KEY = 'decide.apiKey';

export function readKey(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function storeKey(key: string): void {
  sessionStorage.setItem(KEY, key);
}

export function clearKey(): void {
  sessionStorage.removeItem(KEY);
}
