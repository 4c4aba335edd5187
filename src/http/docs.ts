import { createRequire } from 'node:module';
import path from 'node:path';
import express, { type Router } from 'express';

/**
 * API reference pages: `/v1/docs` and `/live/docs` render the surface's OpenAPI document
 * (`openapi.json` beside them) with Swagger UI, served from the `swagger-ui-dist` package: no CDN,
 * so the page works offline and behind a firewall. Swagger UI rather than Redoc or Scalar: one
 * file of JavaScript and one of CSS with no runtime dependencies (the other two pull React and a
 * few hundred MB into the production image). The page runs no inline script, so its CSP can forbid
 * them; Swagger UI sets inline styles, which the CSP allows.
 */
const ASSETS_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The reference page of one surface, mounted at `<root>/docs`; `openapi.json` sits at `<root>/openapi.json`. */
export function docsRouter(title: string): Router {
  const router = express.Router();
  // Relative to the page's own URL (…/docs/), so a proxy's path prefix is kept. Built once per surface.
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="assets/swagger-ui.css">
</head>
<body>
<div id="reference" data-spec-url="../openapi.json"></div>
<script src="assets/swagger-ui-bundle.js"></script>
<script src="assets/init.js"></script>
</body>
</html>
`;
  router.get('/', (req, res) => {
    if (!req.originalUrl.split('?')[0]!.endsWith('/')) return res.redirect(301, `${req.baseUrl}/`);
    res.setHeader('Content-Security-Policy', CSP);
    res.type('html').send(page);
  });
  router.get('/assets/init.js', (_req, res) => {
    res.type('text/javascript').setHeader('Cache-Control', 'public, max-age=3600');
    res.send(`const root = document.getElementById('reference');
window.ui = SwaggerUIBundle({ url: root.dataset.specUrl, domNode: root, deepLinking: true, tryItOutEnabled: false });
`);
  });
  router.get('/assets/:file', (req, res, next) => {
    const type = ASSETS[req.params.file];
    if (!type) return next();
    res.setHeader('Content-Type', type);
    res.setHeader('Cache-Control', 'public, max-age=86400');
    res.sendFile(path.join(ASSETS_DIR, req.params.file));
  });
  return router;
}
