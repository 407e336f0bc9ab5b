import type { Client } from "@urql/vue";
import { createRouter, createWebHistory, type RouteComponent, type RouteRecordRaw } from "vue-router";
import { loadSession, useSession } from "./composables/useSession";

declare module "vue-router" {
  interface RouteMeta {
    public?: boolean;
    title?: string;
    /** operator pages; customers' pages are everything else */
    operator?: boolean;
    /** both roles (owners see their account's part) */
    shared?: boolean;
  }
}

type RouteComponentLoader = () => Promise<RouteComponent | { default: RouteComponent }>;
const ops = (path: string, name: string, title: string, component: RouteComponentLoader): RouteRecordRaw => ({
  path: `ops/${path}`,
  name,
  component,
  meta: { title, operator: true },
});
const operatorRoutes: RouteRecordRaw[] = [
  ops("customers", "ops-customers", "Customers", () => import("./pages/ops/CustomersPage.vue")),
  ops("customers/:id", "ops-customer", "Customer", () => import("./pages/ops/CustomerPage.vue")),
  ops("catalog", "ops-catalog", "Models and upstreams", () => import("./pages/ops/CatalogPage.vue")),
  ops("health", "ops-health", "Health and usage", () => import("./pages/ops/HealthPage.vue")),
  ops("users", "ops-users", "Users", () => import("./pages/ops/UsersPage.vue")),
  ops("audit", "ops-audit", "Audit log", () => import("./pages/AuditPage.vue")),
];

const routes: RouteRecordRaw[] = [
  {
    path: "/login",
    name: "login",
    component: () => import("./pages/LoginPage.vue"),
    meta: { public: true, title: "Sign in" },
  },
  {
    path: "/",
    component: () => import("./layouts/ConsoleLayout.vue"),
    children: [
      {
        path: "",
        name: "dashboard",
        component: () => import("./pages/DashboardPage.vue"),
        meta: { title: "Dashboard" },
      },
      { path: "keys", name: "keys", component: () => import("./pages/KeysPage.vue"), meta: { title: "API keys" } },
      { path: "usage", name: "usage", component: () => import("./pages/UsagePage.vue"), meta: { title: "Usage log" } },
      { path: "wallet", name: "wallet", component: () => import("./pages/WalletPage.vue"), meta: { title: "Wallet" } },
      {
        path: "budgets",
        name: "budgets",
        component: () => import("./pages/BudgetsPage.vue"),
        meta: { title: "Budgets and alerts" },
      },
      { path: "models", name: "models", component: () => import("./pages/ModelsPage.vue"), meta: { title: "Models" } },
      {
        path: "security",
        name: "security",
        component: () => import("./pages/SecurityPage.vue"),
        meta: { title: "Security", shared: true },
      },
      {
        path: "quick-start",
        name: "quick-start",
        component: () => import("./pages/QuickStartPage.vue"),
        meta: { title: "Quick start" },
      },
      {
        path: "audit",
        name: "audit",
        component: () => import("./pages/AuditPage.vue"),
        meta: { title: "Audit log", shared: true },
      },
      ...operatorRoutes,
      {
        path: ":rest(.*)*",
        name: "not-found",
        component: () => import("./pages/NotFoundPage.vue"),
        meta: { title: "Not found" },
      },
    ],
  },
];

/** Only same-site paths are followed after sign-in. */
export function safeNext(value: unknown): string {
  return typeof value === "string" && value.startsWith("/") && !value.startsWith("//") && !value.startsWith("/login")
    ? value
    : "/";
}

export function createConsoleRouter(client: Client) {
  const router = createRouter({
    history: createWebHistory(),
    routes,
    scrollBehavior: () => ({ top: 0 }),
  });
  const session = useSession();
  router.beforeEach(async (to) => {
    await loadSession(client);
    if (to.meta.public) {
      if (to.name === "login" && session.user.value) return safeNext(to.query.next);
      return true;
    }
    if (!session.user.value) return { name: "login", query: to.fullPath === "/" ? {} : { next: to.fullPath } };
    // Routes by role: an operator (no customer account) gets the operator's pages, a customer the customer's.
    const operator = session.isOperator.value;
    if (to.name === "not-found" || to.meta.shared) return true;
    if (operator && !to.meta.operator) return { name: "ops-customers" };
    if (!operator && to.meta.operator) return { name: "dashboard" };
    return true;
  });
  router.afterEach((to) => {
    document.title = to.meta.title ? `${to.meta.title} · modelgate` : "modelgate";
  });
  return router;
}
