// scripts/run-eval.mjs, verbatim from the product document "Running your golden dataset as a
// CI regression gate". The test replaces only the BASE_URL constant to point at a local server.
const API_KEY = process.env.AGENTLASSO_API_KEY;
const DATASET_ID = process.env.AGENTLASSO_DATASET_ID;
const BASE_URL = "https://agentlasso.dev/api/v1";

async function callAgent(input) {
  // Replace with however you actually invoke your agent -- an HTTP call to a
  // staging deployment, a local process, an SDK call. Must return its final
  // output and the tools it called ({ name, arguments? }), so AgentLasso can
  // grade both content and trajectory checks.
  const response = await fetch(process.env.AGENT_ENDPOINT, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ input }),
  });
  const body = await response.json();
  return { output: body.output, toolCalls: body.tool_calls ?? [] };
}

async function main() {
  const createRes = await fetch(`${BASE_URL}/eval-runs`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": API_KEY },
    body: JSON.stringify({ dataset_id: DATASET_ID }),
  });
  const { run_id, test_cases } = await createRes.json();

  const results = [];
  for (const testCase of test_cases) {
    const { output, toolCalls } = await callAgent(testCase.input);
    results.push({
      test_case_id: testCase.test_case_id,
      actual_output: output,
      actual_tool_calls: toolCalls,
    });
  }

  const reportRes = await fetch(`${BASE_URL}/eval-run-results`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": API_KEY },
    body: JSON.stringify({ run_id, results }),
  });
  const graded = await reportRes.json();

  const rate = graded.pass_rate === null ? "n/a" : `${(graded.pass_rate * 100).toFixed(1)}%`;
  console.log(`Pass rate: ${rate} (threshold: ${graded.pass_threshold * 100}%)`);
  for (const r of graded.results) {
    const label = !r.graded ? "SKIP" : r.pass_fail ? "PASS" : "FAIL";
    console.log(`${label} ${r.test_case_id}: ${r.judge_reasoning}`);
  }

  if (!graded.ci_pass) {
    console.error(graded.ci_fail_reason ?? "Eval run failed the configured pass threshold.");
    process.exit(1);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
