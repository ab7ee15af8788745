#![warn(missing_docs)]
//! `#[claw_tool]`: turns an `async fn` into an MCP tool of `clawai-sdk`.
//!
//! Use it through `clawai_sdk::claw_tool`; the generated code names `::clawai_sdk`.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Attribute, Error, Expr, ExprLit, FnArg, GenericArgument, ItemFn, Lit, LitStr, Meta, Pat, PathArguments, ReturnType,
    Type,
};

/// Turns an `async fn` into a tool: the function is replaced by a builder function of
/// the same name that returns a `clawai_sdk::SdkMcpTool`.
///
/// Attributes: `name = "…"` (default: the function's name with `_` replaced by `-`) and
/// `description = "…"` (default: the doc comment, else `"Tool: {name}"`).
#[proc_macro_attribute]
pub fn claw_tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut options = ToolOptions::default();
    let parser = syn::meta::parser(|meta| options.parse(meta));
    syn::parse_macro_input!(attr with parser);
    let function = syn::parse_macro_input!(item as ItemFn);
    expand(options, function).unwrap_or_else(Error::into_compile_error).into()
}

#[derive(Default)]
struct ToolOptions {
    name: Option<LitStr>,
    description: Option<LitStr>,
}

impl ToolOptions {
    fn parse(&mut self, meta: syn::meta::ParseNestedMeta) -> syn::Result<()> {
        let slot = if meta.path.is_ident("name") {
            &mut self.name
        } else if meta.path.is_ident("description") {
            &mut self.description
        } else {
            return Err(meta.error("unknown #[claw_tool] attribute; expected `name = \"…\"` or `description = \"…\"`"));
        };
        if slot.is_some() {
            return Err(meta.error("this #[claw_tool] attribute is given twice"));
        }
        *slot = Some(meta.value()?.parse()?);
        Ok(())
    }
}

/// One parameter of the tool function.
struct Parameter {
    ident: syn::Ident,
    ty: Type,
    /// `Option<T>`: not required; missing or `null` is `None`.
    optional: bool,
    description: Option<String>,
}

/// What the function returns, which decides how its value becomes a tool result.
enum Output {
    /// `ToolResult` or `Result<ToolResult, E>`.
    ToolResult,
    /// `Json<T>` or `Result<Json<T>, E>`: structured output with `T`'s schema.
    Structured(Box<Type>),
}

fn expand(options: ToolOptions, function: ItemFn) -> syn::Result<TokenStream2> {
    let signature = &function.sig;
    if signature.asyncness.is_none() {
        return Err(Error::new(
            signature.fn_token.span(),
            "#[claw_tool] needs an `async fn`: tools run on the async runtime (add `async`)",
        ));
    }
    if let Some(token) = &signature.constness {
        return Err(Error::new(token.span(), "#[claw_tool] functions cannot be `const`"));
    }
    if let Some(token) = &signature.unsafety {
        return Err(Error::new(token.span(), "#[claw_tool] functions cannot be `unsafe`"));
    }
    if !signature.generics.params.is_empty() || signature.generics.where_clause.is_some() {
        return Err(Error::new(
            signature.generics.span(),
            "#[claw_tool] functions cannot be generic: a tool's argument schema must be known",
        ));
    }
    if let Some(variadic) = &signature.variadic {
        return Err(Error::new(variadic.span(), "#[claw_tool] functions cannot be variadic"));
    }
    let output = classify_output(&signature.output, signature.ident.span())?;

    let mut parameters = Vec::new();
    let mut inner_inputs = Vec::new();
    for input in &signature.inputs {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                return Err(Error::new(
                    receiver.span(),
                    "#[claw_tool] functions cannot take `self`: write a free function, or implement \
                     `clawai_sdk::ToolHandler` on your type for a tool with state",
                ));
            }
            FnArg::Typed(typed) => typed,
        };
        let Pat::Ident(binding) = &*typed.pat else {
            return Err(Error::new(
                typed.pat.span(),
                "#[claw_tool] parameters must be plain names: each name is the tool argument's name",
            ));
        };
        if let Type::Reference(reference) = &*typed.ty {
            return Err(Error::new(
                reference.span(),
                "#[claw_tool] parameters must be owned (arguments are deserialised): use `String` for `&str`, \
                 `Vec<T>` for `&[T]`",
            ));
        }
        let (docs, other_attrs): (Vec<&Attribute>, Vec<&Attribute>) =
            typed.attrs.iter().partition(|attr| attr.path().is_ident("doc"));
        parameters.push(Parameter {
            ident: binding.ident.clone(),
            ty: (*typed.ty).clone(),
            optional: option_inner(&typed.ty).is_some(),
            description: doc_text(docs.into_iter()),
        });
        let mut inner = typed.clone();
        inner.attrs = other_attrs.into_iter().cloned().collect();
        inner_inputs.push(inner);
    }

    let function_name = signature.ident.to_string();
    let function_name = function_name.strip_prefix("r#").unwrap_or(&function_name);
    let tool_name = options.name.map(|name| name.value()).unwrap_or_else(|| function_name.replace('_', "-"));
    let description = options
        .description
        .map(|description| description.value())
        .or_else(|| doc_text(function.attrs.iter().filter(|attr| attr.path().is_ident("doc"))))
        .unwrap_or_else(|| format!("Tool: {tool_name}"));

    let properties = parameters.iter().map(|parameter| {
        let name = argument_name(&parameter.ident);
        let schema_type = option_inner(&parameter.ty).unwrap_or(&parameter.ty);
        let schema = schema_of(schema_type);
        match &parameter.description {
            Some(text) => quote! { (#name, ::clawai_sdk::__private::describe(#schema, #text)) },
            None => quote! { (#name, #schema) },
        }
    });
    let required = parameters.iter().filter(|parameter| !parameter.optional).map(|p| argument_name(&p.ident));
    let extract = parameters.iter().map(|parameter| {
        let ident = &parameter.ident;
        let ty = &parameter.ty;
        let name = argument_name(ident);
        let take = if parameter.optional { quote!(optional) } else { quote!(required) };
        quote_spanned! { ty.span() => let #ident: #ty = __arguments.#take(#name)?; }
    });
    let call_args = parameters.iter().map(|parameter| &parameter.ident);
    let output_schema = match &output {
        Output::ToolResult => quote! {},
        Output::Structured(ty) => quote! {
            let __tool = __tool.with_output_schema(::clawai_sdk::__private::schema_for::<#ty>());
        },
    };

    let attrs = &function.attrs;
    let visibility = &function.vis;
    let builder = &signature.ident;
    let return_type = &signature.output;
    let body = &function.block;
    let handler = format_ident!("__ClawTool_{}", function_name);
    let returned = match &signature.output {
        ReturnType::Type(_, ty) => ty.span(),
        ReturnType::Default => Span::call_site(),
    };
    let outcome = quote_spanned! { returned =>
        ::clawai_sdk::__private::IntoToolOutcome::into_tool_outcome(__claw_tool_body(#(#call_args),*).await)
    };

    Ok(quote! {
        #(#attrs)*
        #[allow(clippy::too_many_arguments)]
        #visibility fn #builder() -> ::clawai_sdk::SdkMcpTool {
            #[allow(clippy::too_many_arguments, clippy::unused_async)]
            async fn __claw_tool_body(#(#inner_inputs),*) #return_type #body

            #[allow(non_camel_case_types)]
            struct #handler;

            #[::clawai_sdk::async_trait]
            impl ::clawai_sdk::ToolHandler for #handler {
                async fn call(
                    &self,
                    __args: ::clawai_sdk::__private::JsonValue,
                ) -> ::core::result::Result<::clawai_sdk::ToolResult, ::clawai_sdk::ClawError> {
                    #[allow(unused_mut, unused_variables)]
                    let mut __arguments = ::clawai_sdk::__private::Arguments::new(__args)?;
                    #(#extract)*
                    #outcome
                }
            }

            let __schema = ::clawai_sdk::__private::object_schema(
                ::std::vec![#(#properties),*],
                &[#(#required),*],
            );
            let __tool = ::clawai_sdk::SdkMcpTool::new(
                #tool_name,
                #description,
                __schema,
                ::clawai_sdk::__private::Arc::new(#handler),
            );
            #output_schema
            __tool
        }
    })
}

/// The argument's JSON name: the parameter's name without a raw-identifier prefix.
fn argument_name(ident: &syn::Ident) -> String {
    let name = ident.to_string();
    name.strip_prefix("r#").map(str::to_string).unwrap_or(name)
}

/// The doc comment's text: lines joined with newlines, the one leading space `///`
/// leaves removed, blank ends trimmed. `None` when there is none.
fn doc_text<'a>(attrs: impl Iterator<Item = &'a Attribute>) -> Option<String> {
    let lines: Vec<String> = attrs
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(pair) => match &pair.value {
                Expr::Lit(ExprLit { lit: Lit::Str(text), .. }) => Some(text.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| line.strip_prefix(' ').unwrap_or(&line).trim_end().to_string())
        .collect();
    let text = lines.join("\n").trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// The last path segment of a plain path type, with its generic arguments.
fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        Type::Group(group) => last_segment(&group.elem),
        Type::Paren(paren) => last_segment(&paren.elem),
        _ => None,
    }
}

/// The `T` of `Name<T, …>` when `ty`'s last segment is `Name`.
fn generic_argument<'a>(ty: &'a Type, name: &str) -> Option<&'a Type> {
    let segment = last_segment(ty).filter(|segment| segment.ident == name)?;
    let PathArguments::AngleBracketed(arguments) = &segment.arguments else { return None };
    arguments.args.iter().find_map(|argument| match argument {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}

fn option_inner(ty: &Type) -> Option<&Type> {
    generic_argument(ty, "Option")
}

/// Code for the JSON Schema of a parameter type: the seed's table for the primitive
/// types, `schemars` for everything else.
fn schema_of(ty: &Type) -> TokenStream2 {
    if let Some(items) = generic_argument(ty, "Vec") {
        let items = schema_of(items);
        return quote! { ::clawai_sdk::__private::array_schema(#items) };
    }
    if let Some(inner) = option_inner(ty) {
        return schema_of(inner);
    }
    let primitive = last_segment(ty).filter(|segment| segment.arguments.is_none()).map(|s| s.ident.to_string());
    match primitive.as_deref() {
        Some("String" | "char") => quote! { ::clawai_sdk::__private::string_schema() },
        Some(
            "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "f32"
            | "f64",
        ) => quote! { ::clawai_sdk::__private::number_schema() },
        Some("bool") => quote! { ::clawai_sdk::__private::boolean_schema() },
        _ => quote_spanned! { ty.span() => ::clawai_sdk::__private::schema_for::<#ty>() },
    }
}

const RETURN_HELP: &str =
    "#[claw_tool] functions must return `ToolResult`, `Result<ToolResult, E>`, `Json<T>` or `Result<Json<T>, E>`";

fn classify_output(output: &ReturnType, name_span: Span) -> syn::Result<Output> {
    let ReturnType::Type(_, ty) = output else {
        return Err(Error::new(name_span, format!("{RETURN_HELP}; this one returns nothing")));
    };
    let ty: &Type = ty;
    let plain = |ty: &Type| -> Option<Output> {
        let segment = last_segment(ty)?;
        if segment.ident == "ToolResult" && segment.arguments.is_none() {
            return Some(Output::ToolResult);
        }
        generic_argument(ty, "Json").map(|inner| Output::Structured(Box::new(inner.clone())))
    };
    if let Some(output) = plain(ty) {
        return Ok(output);
    }
    if let Some(output) = generic_argument(ty, "Result").and_then(plain) {
        return Ok(output);
    }
    Err(Error::new(ty.span(), RETURN_HELP))
}
