import { computed, ref } from "vue";

/** Forward cursors with a stack, so "Previous" can go back to pages already seen. */
export function useCursorPages() {
  const stack = ref<(string | null)[]>([null]);
  return {
    after: computed(() => stack.value[stack.value.length - 1] ?? null),
    pageNumber: computed(() => stack.value.length),
    hasPrevious: computed(() => stack.value.length > 1),
    next(cursor: string | null) {
      if (cursor) stack.value = [...stack.value, cursor];
    },
    previous() {
      if (stack.value.length > 1) stack.value = stack.value.slice(0, -1);
    },
    reset() {
      stack.value = [null];
    },
  };
}

export type CursorPages = ReturnType<typeof useCursorPages>;
