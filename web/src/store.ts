/** A value that components can watch (a small stand-in for a state library). */
import { useEffect, useState } from 'preact/hooks';

export interface Signal<T> {
  value: T;
  subscribe(listener: (value: T) => void): () => void;
}

export function signal<T>(initial: T): Signal<T> {
  let current = initial;
  const listeners = new Set<(value: T) => void>();
  return {
    get value() {
      return current;
    },
    set value(next: T) {
      current = next;
      for (const listener of [...listeners]) listener(next);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

export function useSignal<T>(source: Signal<T>): T {
  const [value, setValue] = useState(source.value);
  useEffect(() => {
    setValue(source.value);
    return source.subscribe(setValue);
  }, [source]);
  return value;
}
