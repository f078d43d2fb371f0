import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as cdk from 'aws-cdk-lib/core';
import * as cfninc from 'aws-cdk-lib/cloudformation-include';
import * as s3assets from 'aws-cdk-lib/aws-s3-assets';
import { Construct } from 'constructs';
import { readTemplate } from '../tools/cfn-yaml';
import { OUTPUT_NAMES, PARAMETER_NAMES, SluiceOutputs, SluiceParameters } from './template.generated';

export { OUTPUT_NAMES, PARAMETER_NAMES, SluiceOutputs, SluiceParameters };

/** infra/template.yaml of this repository, or $SLUICE_TEMPLATE. */
export const DEFAULT_TEMPLATE = path.resolve(process.env.SLUICE_TEMPLATE ?? path.join(__dirname, '../../../template.yaml'));

export interface SluiceStackProps extends cdk.StackProps {
  /** Values of the template's parameters; each becomes that parameter's Default. */
  readonly parameters: SluiceParameters;
  /**
   * The `.aws-sam/build` directory of a `sam build` of the same template. Each
   * `AWS::Serverless::Function`'s code is taken from `<samBuildDir>/<LogicalId>` and
   * uploaded by `cdk deploy` as a CDK asset. Without it the functions keep the
   * template's local `CodeUri`, which synthesizes but does not deploy.
   * @default - no function code (synth only; a warning says so)
   */
  readonly samBuildDir?: string;
  /** @default DEFAULT_TEMPLATE (infra/template.yaml) */
  readonly templateFile?: string;
}

const LOOP = 'Fn::ForEach::';
const SECTIONS_WITH_LOOPS = ['Conditions', 'Resources', 'Outputs'];

/** Renders a template fragment as is: the `Fn::ForEach` loops CfnInclude cannot read. */
class VerbatimFragment extends cdk.CfnElement {
  constructor(scope: Construct, id: string, private readonly fragment: Record<string, unknown>) {
    super(scope, id);
  }

  /** @internal */
  public _toCloudFormation(): object {
    return this.fragment;
  }
}

/**
 * sluice, as defined by infra/template.yaml, in a stack of its own. The template is
 * read at synth time and included with `cloudformation-include`; its parameters are
 * `props.parameters`, its outputs are properties of this stack (`stack.ingestUrl`, ...).
 * It is a stack, not a construct in your stack, because the template's `Transform`
 * and SAM `Globals` apply to a whole template.
 */
export class SluiceStack extends cdk.Stack {
  /** The included template: `getResource('IngestFunction')`, `getParameter('Stage')`, ... */
  public readonly included: cfninc.CfnInclude;
  /** The template as read at synth time (JSON form). */
  public readonly source: Record<string, any>;

  constructor(scope: Construct, id: string, props: SluiceStackProps) {
    super(scope, id, props);
    const templateFile = path.resolve(props.templateFile ?? DEFAULT_TEMPLATE);
    const source = readTemplate(templateFile);
    this.source = source;

    // 1. Transforms in the template's order. CfnInclude turns every AWS::Serverless::*
    //    resource into an aws-sam L1 whose constructor calls stack.addTransform(SAM), and the
    //    template's own Transform list is merged after that: the result would list SAM before
    //    AWS::LanguageExtensions, and CloudFormation would run SAM on unexpanded Fn::ForEach.
    for (const transform of asArray(source.Transform)) {
      if (typeof transform !== 'string') throw new Error(`${templateFile}: a Transform with parameters is not supported here`);
      this.addTransform(transform);
    }

    // 2. CfnInclude reads every top-level `Fn::ForEach::Name` entry as a resource and fails
    //    ("The `type` property is required", aws/aws-cdk#27315): include the template without
    //    those entries, and render them as written next to it.
    const modelled: Record<string, any> = { ...source };
    const loops: Record<string, Record<string, unknown>> = {};
    for (const section of SECTIONS_WITH_LOOPS) {
      const entries = source[section];
      if (!entries) continue;
      const kept: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(entries)) {
        if (key.startsWith(LOOP)) (loops[section] ??= {})[key] = value;
        else kept[key] = value;
      }
      modelled[section] = kept;
    }
    const outdir = cdk.Stage.of(this)?.outdir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-'));
    fs.mkdirSync(outdir, { recursive: true });
    const includedFile = path.join(outdir, `${this.artifactId}.included-template.json`);
    fs.writeFileSync(includedFile, JSON.stringify(modelled, null, 1));
    this.included = new cfninc.CfnInclude(this, 'Template', { templateFile: includedFile, preserveLogicalIds: true });
    if (Object.keys(loops).length > 0) new VerbatimFragment(this, 'Loops', loops);

    // 3. Parameters: a prop is the parameter's Default (checked against the template's rules).
    const names: Record<string, string> = PARAMETER_NAMES;
    for (const [prop, value] of Object.entries(props.parameters ?? {})) {
      if (value === undefined) continue;
      const name = names[prop] ?? prop;
      const declared = source.Parameters?.[name];
      if (!declared) throw new Error(`parameters.${prop}: ${templateFile} has no parameter ${name}`);
      const text = Array.isArray(value) ? value.map(String).join(',') : String(value);
      checkParameter(`parameters.${prop}`, declared, value, text);
      this.included.getParameter(name).default = Array.isArray(value) ? text : value;
    }

    // 4. Code: local paths become CDK assets (what `sam package` does with S3 uploads).
    const templateDir = path.dirname(templateFile);
    const globals = source.Globals ?? {};
    for (const [logicalId, resource] of Object.entries<any>(modelled.Resources ?? {})) {
      if (resource.Type === 'AWS::Serverless::Function') {
        const codeUri = resource.Properties?.CodeUri ?? globals.Function?.CodeUri;
        if (typeof codeUri !== 'string' || codeUri.startsWith('s3://')) continue;
        if (!props.samBuildDir) continue;
        const dir = path.join(path.resolve(props.samBuildDir), logicalId);
        if (!fs.existsSync(dir)) throw new Error(`${dir} is missing: samBuildDir must be the .aws-sam/build of a 'sam build' of ${templateFile}`);
        const asset = new s3assets.Asset(this, `${logicalId}Code`, { path: dir });
        this.included.getResource(logicalId).addPropertyOverride('CodeUri', { Bucket: asset.s3BucketName, Key: asset.s3ObjectKey });
      } else if (resource.Type === 'AWS::Serverless::StateMachine') {
        const uri = resource.Properties?.DefinitionUri;
        if (typeof uri !== 'string' || uri.startsWith('s3://')) continue;
        const asset = new s3assets.Asset(this, `${logicalId}Definition`, { path: path.resolve(templateDir, uri) });
        this.included.getResource(logicalId).addPropertyOverride('DefinitionUri', { Bucket: asset.s3BucketName, Key: asset.s3ObjectKey });
      }
    }
    if (!props.samBuildDir) {
      cdk.Annotations.of(this).addWarningV2('sluice:no-function-code',
        'no samBuildDir: the functions keep the template\'s local CodeUri, so this synthesizes but does not deploy; run `sam build` and pass its .aws-sam/build');
    }

    // 5. Outputs, as properties of this stack. Built from the template's value with CDK's own
    //    Ref/GetAtt/Join so that another stack can use them: CfnInclude's parsed Fn::Sub keeps
    //    its references inside the Sub string, and a cross-stack reference there synthesizes
    //    {"Fn::Sub": {"Fn::Join": ...}}, which CloudFormation rejects (test/sluice.test.ts).
    for (const [prop, name] of Object.entries(OUTPUT_NAMES)) {
      const output = source.Outputs?.[name];
      if (!output) continue;
      const included = this.included.getOutput(name); // fails here if CfnInclude dropped it
      let value: string;
      try {
        value = cdk.Token.asString(this.toCdk(output.Value));
      } catch {
        value = cdk.Token.asString(included.value); // CfnInclude's reading: fine in this stack
      }
      Object.defineProperty(this, prop, { value, enumerable: true });
    }
  }

  /** A template value (JSON form) as CDK tokens: Ref, Fn::GetAtt, Fn::Sub (as Fn::Join), Fn::Join, Fn::If. */
  private toCdk(value: any): any {
    if (Array.isArray(value)) return value.map((v) => this.toCdk(v));
    if (value === null || typeof value !== 'object') return value;
    const keys = Object.keys(value);
    if (keys.length !== 1) return Object.fromEntries(keys.map((k) => [k, this.toCdk(value[k])]));
    const [fn] = keys;
    const arg = value[fn];
    if (fn === 'Ref') return this.ref(arg);
    if (fn === 'Fn::GetAtt') {
      const [id, attr] = typeof arg === 'string' ? [arg.slice(0, arg.indexOf('.')), arg.slice(arg.indexOf('.') + 1)] : arg;
      return this.included.getResource(id).getAtt(attr);
    }
    if (fn === 'Fn::If') return cdk.Fn.conditionIf(arg[0], this.toCdk(arg[1]), this.toCdk(arg[2]));
    if (fn === 'Fn::Join') {
      const list = this.toCdk(arg[1]);
      return cdk.Fn.join(arg[0], Array.isArray(list) ? list.map((v: unknown) => cdk.Token.asString(v)) : cdk.Token.asList(list));
    }
    if (fn === 'Fn::Sub') {
      const [text, vars] = typeof arg === 'string' ? [arg, {}] : arg;
      const parts: string[] = [];
      let rest: string = text;
      for (let m = /\$\{([^}]*)\}/.exec(rest); m; m = /\$\{([^}]*)\}/.exec(rest)) {
        parts.push(rest.slice(0, m.index));
        const name = m[1];
        if (name.startsWith('!')) parts.push('${' + name.slice(1) + '}');
        else if (name in vars) parts.push(cdk.Token.asString(this.toCdk(vars[name])));
        else if (name.includes('.')) parts.push(cdk.Token.asString(this.toCdk({ 'Fn::GetAtt': name })));
        else parts.push(cdk.Token.asString(this.ref(name)));
        rest = rest.slice(m.index + m[0].length);
      }
      parts.push(rest);
      const nonEmpty = parts.filter((p) => p !== '');
      return nonEmpty.length === 1 ? nonEmpty[0] : cdk.Fn.join('', nonEmpty);
    }
    return new cdk.Intrinsic(value); // any other function: as written (fine in this stack)
  }

  private ref(id: string): unknown {
    if (id.startsWith('AWS::')) return cdk.Fn.ref(id);
    if (this.source.Parameters?.[id]) return this.included.getParameter(id).value;
    return this.included.getResource(id).ref;
  }
}

// The outputs are typed properties of the class (assigned in the constructor).
export interface SluiceStack extends SluiceOutputs {}

function asArray(value: unknown): unknown[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

function checkParameter(what: string, declared: any, value: unknown, text: string): void {
  const type = String(declared.Type);
  const isList = type === 'CommaDelimitedList' || type.startsWith('List<');
  if (Array.isArray(value) !== isList) throw new Error(`${what}: ${type} wants ${isList ? 'a list' : 'a single value'}`);
  const items = isList ? (value as unknown[]).map(String) : [text];
  for (const item of items) {
    if ((type === 'Number' || type === 'List<Number>') && !Number.isFinite(Number(item))) throw new Error(`${what}: ${item} is not a number`);
    if (declared.AllowedPattern && !new RegExp(`^(?:${declared.AllowedPattern})$`).test(item)) {
      throw new Error(`${what}: '${item}' does not match ${declared.AllowedPattern}`);
    }
    if (declared.MinValue !== undefined && Number(item) < Number(declared.MinValue)) throw new Error(`${what}: ${item} < MinValue ${declared.MinValue}`);
    if (declared.MaxValue !== undefined && Number(item) > Number(declared.MaxValue)) throw new Error(`${what}: ${item} > MaxValue ${declared.MaxValue}`);
    if (declared.MinLength !== undefined && item.length < Number(declared.MinLength)) throw new Error(`${what}: shorter than MinLength ${declared.MinLength}`);
    if (declared.MaxLength !== undefined && item.length > Number(declared.MaxLength)) throw new Error(`${what}: longer than MaxLength ${declared.MaxLength}`);
  }
  if (Array.isArray(declared.AllowedValues) && !declared.AllowedValues.map(String).includes(text)) {
    throw new Error(`${what}: ${text} is not one of ${declared.AllowedValues.join(', ')}`);
  }
}

/**
 * SluiceParameters from text values (CDK context, environment, a config file), by the
 * template's parameter types: a list is comma-separated, a Number is a number. A key
 * `get` returns nothing for is left out.
 */
export function parametersFromText(templateFile: string, get: (prop: string) => unknown): SluiceParameters {
  const declared = readTemplate(templateFile).Parameters ?? {};
  const out: Record<string, unknown> = {};
  for (const [prop, name] of Object.entries<string>(PARAMETER_NAMES)) {
    const value = get(prop);
    if (value === undefined || value === null || !declared[name]) continue;
    const type = String(declared[name].Type);
    if (type === 'CommaDelimitedList' || type.startsWith('List<')) {
      const list = Array.isArray(value) ? value : String(value).split(',').map((s) => s.trim()).filter(Boolean);
      out[prop] = type === 'List<Number>' ? list.map(Number) : list.map(String);
    } else {
      out[prop] = type === 'Number' ? Number(value) : String(value);
    }
  }
  return out as unknown as SluiceParameters;
}
