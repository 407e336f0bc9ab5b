import urql from "@urql/vue";
import { createApp } from "vue";
import App from "./App.vue";
import { createClient } from "./client";
import { createConsoleRouter } from "./router";
import "./styles/base.css";
import "./styles/layout.css";

let expiring = false;
const client = createClient(() => {
  // A full reload to the sign-in page also drops every cached result of the ended session.
  if (expiring || location.pathname === "/login") return;
  expiring = true;
  const next = location.pathname + location.search;
  location.assign(`/login?reason=expired&next=${encodeURIComponent(next)}`);
});
const router = createConsoleRouter(client);

createApp(App).use(urql, client).use(router).mount("#app");
