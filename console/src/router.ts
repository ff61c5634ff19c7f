// Pages are paths under /console (the server answers every one of them with the page), so a
// reload or a shared link opens the same page. Navigation uses the History API.
import { useEffect, useState } from 'preact/hooks';

export const PAGES = [
  { path: 'playground', title: 'Playground' },
  { path: 'models', title: 'Models' },
  { path: 'batches', title: 'Batches' },
  { path: 'health', title: 'Health' },
] as const;
export type PageName = (typeof PAGES)[number]['path'];

export function pageOf(pathname: string): PageName {
  const name = pathname.replace(/^\/console\/?/, '').split('/')[0];
  return PAGES.find((p) => p.path === name)?.path ?? 'playground';
}

export function navigate(page: PageName): void {
  history.pushState(null, '', `/console/${page}`);
  dispatchEvent(new PopStateEvent('popstate'));
}

export function usePage(): PageName {
  const [page, setPage] = useState(pageOf(location.pathname));
  useEffect(() => {
    const update = () => setPage(pageOf(location.pathname));
    addEventListener('popstate', update);
    return () => removeEventListener('popstate', update);
  }, []);
  return page;
}
