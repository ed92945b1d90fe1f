// A workflow declaring `magrathea::Error` uses `?` on any std error (here a ParseIntError and
// a serde_json::Error), on a failed step and on a failed child workflow.
use magrathea::{Context, StepError, TaskError, Workflow, WorkflowError, task, workflow};

#[task]
async fn double(n: u32) -> Result<u32, TaskError> {
    Ok(n * 2)
}

#[workflow]
async fn parse(_ctx: Context, text: String) -> Result<u32, magrathea::Error> {
    let n: u32 = text.parse()?;
    Ok(n)
}

#[workflow]
async fn parse_and_double(ctx: Context, text: String) -> Result<u32, magrathea::Error> {
    let n = ctx.child(parse, text).await?;
    let json: serde_json::Value = serde_json::from_str(&n.to_string())?;
    let n = u32::try_from(json.as_u64().unwrap_or_default())?;
    let doubled = ctx.task(double, n).await?;
    if doubled == 0 {
        return Err(magrathea::Error::failed("nothing to double"));
    }
    Ok(doubled)
}

/// Returns a step's error unchanged: `StepError` converts into `WorkflowError` too.
#[workflow]
async fn step_error(ctx: Context) -> Result<u32, StepError> {
    ctx.task(double, 1).await
}

/// `WorkflowError` takes a child's and a step's error through `?`.
#[workflow]
async fn plain(ctx: Context, text: String) -> Result<u32, WorkflowError> {
    let n = ctx.child(parse, text).await?;
    Ok(ctx.task(double, n).await?)
}

fn assert_workflow<W: Workflow>(_: W) {}

fn main() {
    assert_workflow(parse);
    assert_workflow(parse_and_double);
    assert_workflow(step_error);
    assert_workflow(plain);
}
