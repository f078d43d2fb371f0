// The CDK app: one SluiceStack, its parameters from CDK context.
//   npx aws-cdk@2 deploy -c vpcId=vpc-0abc -c subnetIds=subnet-1,subnet-2 -c cafe24ClientId=abc -c stage=prod
// Context keys are the props of SluiceParameters (lib/template.generated.ts); a list is comma-separated.
// Other context: stackName (default sluice-<stage>), samBuildDir (default infra/.aws-sam/build when it exists).
import * as fs from 'fs';
import * as path from 'path';
import * as cdk from 'aws-cdk-lib/core';
import { DEFAULT_TEMPLATE, SluiceStack, parametersFromText } from '../lib/sluice-stack';

const app = new cdk.App({ outdir: process.env.CDK_OUTDIR ?? path.resolve(__dirname, '../../cdk.out') });
const context = (key: string): string | undefined => app.node.tryGetContext(key);

const templateFile = DEFAULT_TEMPLATE;
const parameters = parametersFromText(templateFile, context);
const samBuild = path.join(path.dirname(templateFile), '.aws-sam/build');
const stack = new SluiceStack(app, context('stackName') ?? `sluice-${parameters.stage ?? 'prod'}`, {
  parameters,
  samBuildDir: context('samBuildDir') ?? (fs.existsSync(samBuild) ? samBuild : undefined),
  templateFile,
});

app.synth();
console.log(`synthesized stack ${stack.stackName} into ${app.outdir}`);
