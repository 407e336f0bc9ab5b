import { computed, ref } from "vue";

export type ThemeChoice = "system" | "light" | "dark";
const KEY = "mg-theme";

function stored(): ThemeChoice {
  try {
    const v = localStorage.getItem(KEY);
    return v === "light" || v === "dark" ? v : "system";
  } catch {
    return "system";
  }
}

const choice = ref<ThemeChoice>(stored());
const media = typeof window !== "undefined" ? window.matchMedia("(prefers-color-scheme: dark)") : null;
const systemDark = ref(media?.matches ?? false);
media?.addEventListener("change", (e) => (systemDark.value = e.matches));

function apply(value: ThemeChoice) {
  const root = document.documentElement;
  if (value === "system") delete root.dataset.theme;
  else root.dataset.theme = value;
  try {
    if (value === "system") localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, value);
  } catch {
    /* private mode: the choice lasts for this page only */
  }
}

/** Light, dark, or following the system; the choice is kept in localStorage. */
export function useTheme() {
  const effective = computed<"light" | "dark">(() =>
    choice.value === "system" ? (systemDark.value ? "dark" : "light") : choice.value,
  );
  function set(value: ThemeChoice) {
    choice.value = value;
    apply(value);
  }
  function cycle() {
    set(choice.value === "system" ? "light" : choice.value === "light" ? "dark" : "system");
  }
  return { choice, effective, set, cycle };
}
