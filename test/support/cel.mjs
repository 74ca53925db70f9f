// Evaluates a ValidatingAdmissionPolicy's CEL the way kube-apiserver does, for tests: matchConditions, then the
// variables in order, then each validation (and its messageExpression when it fails). Run as a child process
// (the CEL library is an ES module): reads {policy, request, object, oldObject} as JSON on stdin, writes the result.
import { evaluate } from '@marcbachmann/cel-js';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { policy, request, object, oldObject } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const plain = (v) => (typeof v === 'bigint' ? Number(v) : v);
const context = { request, object, oldObject, variables: {} };
const out = { matched: true, denied: [], variables: {} };
for (const condition of policy.spec.matchConditions ?? []) {
  if (evaluate(condition.expression, context) !== true) out.matched = false;
}
if (out.matched) {
  for (const variable of policy.spec.variables ?? []) {
    context.variables[variable.name] = evaluate(variable.expression, context);
    out.variables[variable.name] = plain(context.variables[variable.name]);
  }
  for (const validation of policy.spec.validations ?? []) {
    if (evaluate(validation.expression, context) === true) continue;
    const message = validation.messageExpression ? evaluate(validation.messageExpression, context) : validation.message;
    out.denied.push({ message, reason: validation.reason ?? 'Invalid' });
  }
}
process.stdout.write(JSON.stringify(out));
