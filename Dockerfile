# One image for the API, the worker and the operator CLI (docker-compose.yml picks the command).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund
COPY . .
RUN node node_modules/prisma/build/index.js generate \
 && node_modules/.bin/tsx workflows/bundle.ts \
 && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production PORT=4000
WORKDIR /app
COPY --from=build /app /app
USER node
EXPOSE 4000
CMD ["node_modules/.bin/tsx", "server/main.ts"]
