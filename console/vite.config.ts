import vue from "@vitejs/plugin-vue";
import { defineConfig } from "vite";
import { inlineDocuments } from "./inline-documents";

// `npm run dev -w console` serves the console with hot reload and forwards the API to a running
// `npm start` (MODELGATE_URL, default http://127.0.0.1:8080), so cookies stay same-origin.
const target = process.env.MODELGATE_URL ?? "http://127.0.0.1:8080";

export default defineConfig({
  plugins: [vue(), inlineDocuments()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    chunkSizeWarningLimit: 700,
    rollupOptions: {
      output: { manualChunks: { chart: ["chart.js"], vendor: ["vue", "vue-router", "@urql/vue", "graphql"] } },
    },
  },
  server: {
    proxy: { "/graphql": target, "/api": target, "/auth": target, "/v1": target },
  },
});
