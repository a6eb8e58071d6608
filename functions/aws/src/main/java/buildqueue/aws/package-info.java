/** The AWS face of buildqueue: RDS Data API, ECS/Fargate, Lambda, EventBridge. */
package buildqueue.aws;
