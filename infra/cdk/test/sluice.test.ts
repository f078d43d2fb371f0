// A prop sets a parameter; an output is a property a CDK app can use; a `sam build`
// directory turns every function's code into an asset. Plain node:assert, no framework:
//   node dist/test/sluice.test.js
import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as cdk from 'aws-cdk-lib/core';
import { SluiceStack, SluiceStackProps } from '../lib/sluice-stack';

// CDK's built-in CloudFormation validation (about 5 s a synth) runs in the synth of
// scripts/cdk-synth.sh; these tests check what the stack does, not the template.
process.env.CDK_VALIDATION = 'false';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-cdk-test-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
let n = 0;
function synth(props: Omit<SluiceStackProps, 'parameters'> & { parameters?: Partial<SluiceStackProps['parameters']> }) {
  const app = new cdk.App({ outdir: path.join(tmp, `app${++n}`) });
  const stack = new SluiceStack(app, 'Sluice', { ...props, parameters: { vpcId: 'vpc-0123456789abcdef0', subnetIds: ['subnet-a', 'subnet-b'], cafe24ClientId: 'client', ...props.parameters } });
  return { app, stack };
}
const tests: [string, () => void][] = [];
const test = (name: string, fn: () => void) => tests.push([name, fn]);

test('a prop sets its parameter (as the Default, so the parameter stays)', () => {
  const { app, stack } = synth({ parameters: { stage: 'ci', maxReceiveCount: 7 } });
  const template = app.synth().getStackArtifact(stack.artifactId).template;
  assert.strictEqual(template.Parameters.Stage.Default, 'ci');
  assert.strictEqual(template.Parameters.MaxReceiveCount.Default, 7);
  assert.strictEqual(template.Parameters.SubnetIds.Default, 'subnet-a,subnet-b');
  assert.strictEqual(template.Parameters.VpcId.Default, 'vpc-0123456789abcdef0');
  assert.strictEqual(template.Parameters.Stage.AllowedPattern, stack.source.Parameters.Stage.AllowedPattern);
});

test('a prop the template forbids fails at synth', () => {
  assert.throws(() => synth({ parameters: { stage: 'Not_A_Stage' } }), /does not match/);
  assert.throws(() => synth({ parameters: { mapMaxConcurrency: 1000 } }), /MaxValue/);
  assert.throws(() => synth({ parameters: { logRetentionDays: 2 as 1 } }), /not one of/);
});

test('an output is a property, usable in the stack and from another stack', () => {
  const { app, stack } = synth({});
  assert.ok(cdk.Token.isUnresolved(stack.ingestUrl));
  // The template's `!Sub "https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"`, as a Join.
  assert.deepStrictEqual(stack.resolve(stack.ingestUrl), {
    'Fn::Join': ['', ['https://', { Ref: 'HttpApi' }, '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }]],
  });
  assert.deepStrictEqual(stack.resolve(stack.stateMachineArn), { Ref: 'Pipeline' });
  assert.deepStrictEqual(stack.resolve(stack.cacheEndpoint), { 'Fn::GetAtt': ['Cache', 'Endpoint.Address'] });
  const consumer = new cdk.Stack(app, 'Consumer');
  new cdk.CfnWaitConditionHandle(consumer, 'Something');
  new cdk.CfnOutput(consumer, 'Url', { value: stack.ingestUrl });
  const assembly = app.synth();
  const used = assembly.getStackArtifact(consumer.artifactId).template.Outputs.Url.Value;
  const exports = Object.values<any>(assembly.getStackArtifact(stack.artifactId).template.Outputs).filter((o) => o.Export);
  assert.deepStrictEqual(exports.map((o) => o.Value), [{ Ref: 'HttpApi' }]);
  assert.deepStrictEqual(used, {
    'Fn::Join': ['', ['https://', { 'Fn::ImportValue': exports[0].Export.Name }, '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }]],
  });
});

test('a sam build directory makes every function\'s code an asset', () => {
  const build = path.join(tmp, 'build');
  const functions = Object.entries<any>(synth({}).stack.source.Resources)
    .filter(([, r]) => r.Type === 'AWS::Serverless::Function').map(([id]) => id);
  assert.ok(functions.length > 0);
  for (const id of functions) {
    fs.mkdirSync(path.join(build, id), { recursive: true });
    fs.writeFileSync(path.join(build, id, 'bootstrap'), id);
  }
  const { app, stack } = synth({ samBuildDir: build });
  const artifact = app.synth().getStackArtifact(stack.artifactId);
  for (const id of functions) {
    const code = artifact.template.Resources[id].Properties.CodeUri;
    assert.deepStrictEqual(Object.keys(code), ['Bucket', 'Key'], id);
  }
  assert.strictEqual(artifact.messages.filter((m) => m.entry.data && String(m.entry.data).includes('no samBuildDir')).length, 0);
  fs.rmSync(path.join(build, functions[0]), { recursive: true });
  assert.throws(() => synth({ samBuildDir: build }), /is missing/);
});

test('the template\'s transforms keep their order; Fn::ForEach loops are as written', () => {
  const { app, stack } = synth({});
  const template = app.synth().getStackArtifact(stack.artifactId).template;
  const want = [stack.source.Transform].flat();
  assert.deepStrictEqual([template.Transform].flat().slice(0, want.length), want);
  for (const [id, loop] of Object.entries(stack.source.Resources).filter(([id]) => id.startsWith('Fn::ForEach::'))) {
    assert.deepStrictEqual(template.Resources[id], loop);
  }
});

let failed = 0;
for (const [name, fn] of tests) {
  try {
    fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}\n${(e as Error).stack}`);
  }
}
if (failed) {
  console.error(`cdk test: ${failed} of ${tests.length} failed`);
  process.exit(1);
}
console.log(`cdk test: ${tests.length} passed`);
