// The console: a key form until the server accepts a key, then four pages (router.ts). Every
// figure comes from the public HTTP API (api.ts).
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';

import { ApiProblem, call, whenKeyRejected } from './api.js';
import { Problem } from './components/problem.js';
import { clearForm } from './form-store.js';
import { clearKey, keyProblem, readKey, storeKey } from './key-store.js';
import { Batches } from './pages/batches.js';
import { Health } from './pages/health.js';
import { Models } from './pages/models.js';
import { Playground } from './pages/playground.js';
import { navigate, PAGES, usePage, type PageName } from './router.js';
import './styles.css';

function KeyForm({ onAccepted, notice }: { onAccepted: () => void; notice: string }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>();
  const [checking, setChecking] = useState(false);
  const [malformed, setMalformed] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    const problem = keyProblem(key.trim());
    setMalformed(problem);
    if (problem) return;
    setChecking(true);
    try {
      // Any authenticated read checks the key; the listing is the cheapest.
      await call('/v1/models', { key: key.trim() });
      storeKey(key.trim());
      onAccepted();
    } catch (err) {
      setError(err);
    } finally {
      setChecking(false);
    }
  };
  const rejected = error instanceof ApiProblem && error.status === 401;
  return (
    <form class="panel key-form" onSubmit={submit} aria-label="API key">
      <h2>Sign in with an API key</h2>
      <p class="hint">
        The key stays in this tab (sessionStorage) and is sent only as an <code>Authorization: Bearer</code> header to this server. Closing the tab forgets it.
      </p>
      {notice ? (
        <p class="problem" role="alert">
          {notice}
        </p>
      ) : null}
      <label class="wide">
        API key
        <input id="api-key" type="password" autoComplete="off" spellcheck={false} value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} required />
      </label>
      <button type="submit" disabled={checking || key.trim() === ''}>
        {checking ? 'Checking…' : 'Use this key'}
      </button>
      {malformed ? (
        <p class="problem" role="alert" data-key-rejected>
          <strong>This key cannot be used.</strong> {malformed}
        </p>
      ) : rejected ? (
        <p class="problem" role="alert" data-key-rejected>
          <strong>This key was not accepted by the server.</strong> {(error as ApiProblem).message}
        </p>
      ) : (
        <Problem error={error} />
      )}
    </form>
  );
}

function Nav({ page }: { page: PageName }) {
  return (
    <nav aria-label="pages">
      {PAGES.map((p) => (
        <a
          key={p.path}
          href={`/console/${p.path}`}
          aria-current={p.path === page ? 'page' : undefined}
          onClick={(e) => {
            if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
            e.preventDefault();
            navigate(p.path);
          }}
        >
          {p.title}
        </a>
      ))}
    </nav>
  );
}

function App() {
  const [signedIn, setSignedIn] = useState(readKey() !== null);
  const [notice, setNotice] = useState('');
  const page = usePage();
  useEffect(() => {
    whenKeyRejected((message) => {
      setNotice(`The server stopped accepting the key: ${message}`);
      setSignedIn(false);
    });
  }, []);
  useEffect(() => {
    document.title = `${PAGES.find((p) => p.path === page)?.title ?? ''} · decide console`;
  }, [page]);
  return (
    <>
      <header class="top">
        <h1>decide console</h1>
        {signedIn ? <Nav page={page} /> : null}
        {signedIn ? (
          <button
            type="button"
            class="quiet"
            onClick={() => {
              clearKey();
              clearForm();
              setNotice('');
              setSignedIn(false);
            }}
          >
            Forget key
          </button>
        ) : null}
      </header>
      <main id="main">
        {!signedIn ? (
          <KeyForm
            notice={notice}
            onAccepted={() => {
              setNotice('');
              setSignedIn(true);
            }}
          />
        ) : page === 'models' ? (
          <Models />
        ) : page === 'batches' ? (
          <Batches />
        ) : page === 'health' ? (
          <Health />
        ) : (
          <Playground />
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
