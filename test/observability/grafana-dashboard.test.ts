import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createBreakwaterMetrics } from '../../src/observability/prometheus-metrics.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';

// The dashboard in the repo must only chart metrics breakwater really exports (a renamed metric fails here).
const dashboard = JSON.parse(
  readFileSync(new URL('../../observability/grafana-dashboard.json', import.meta.url), 'utf8'),
) as {
  panels: { title: string; targets: { expr: string }[] }[];
};

describe('observability/grafana-dashboard.json', () => {
  it('has the on-call panels, and every series it queries is one breakwater exports', async () => {
    const supervisor = createSupervisor(
      {
        endpoints: [{ id: 'e', provider: 'openai', model: 'gpt-4o', apiKey: 'sk-dashboard-test-0000000001' }],
        chains: { main: ['e'] },
      },
      { tracing: false },
    );
    try {
      const { registry } = createBreakwaterMetrics(supervisor);
      const exported = new Set<string>();
      for (const m of await registry.getMetricsAsJSON()) {
        exported.add(m.name);
        if (String(m.type) === 'histogram')
          for (const s of ['_bucket', '_sum', '_count']) exported.add(m.name + s);
      }
      const titles = dashboard.panels.map((p) => p.title.toLowerCase());
      for (const want of ['in flight', '429', 'breaker', 'degraded'])
        expect(titles.some((t) => t.includes(want))).toBe(true);
      const used = new Set<string>();
      for (const p of dashboard.panels)
        for (const t of p.targets)
          for (const name of t.expr.match(/breakwater_[a-z_]+/g) ?? []) used.add(name);
      expect(used.size).toBeGreaterThan(8);
      for (const name of used) expect(exported, `${name} is charted but not exported`).toContain(name);
    } finally {
      await supervisor.stop();
    }
  });
});
